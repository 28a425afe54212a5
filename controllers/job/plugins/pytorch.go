package plugins

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/ringfire/ringfire/controllers/job/state"
)

// Environment variables of the pytorch plugin, read by torch.distributed.
const (
	EnvMasterAddr = "MASTER_ADDR"
	EnvMasterPort = "MASTER_PORT"
	EnvWorldSize  = "WORLD_SIZE"
	EnvRank       = "RANK"
)

// The pytorch plugin's init container that holds a worker back until the master listens, and
// the image it runs by default.
const (
	WaitForMasterName  = "wait-for-master"
	DefaultWaitImage   = "busybox:1.36.1"
	defaultWaitTimeout = 300
)

// pytorch wires torch.distributed: every container gets MASTER_ADDR (the DNS name of the master
// task's first pod), MASTER_PORT and WORLD_SIZE (the replicas of all tasks); the master's pods get
// RANK 0 and worker i gets RANK i+1; every container opens the port. With --wait-master-enabled,
// every worker pod also gets a last init container, wait-for-master, that waits until the
// master's port answers, for at most --wait-master-timeout seconds, then fails the pod.
//
// Flags: --master (task, default "master"), --worker (task, default "worker"), --port (23456),
// --wait-master-enabled (false), --wait-master-image (busybox:1.36.1), --wait-master-timeout
// (300 seconds).
type pytorch struct {
	ignoredArgs
	master, worker string
	port           int
	wait           bool
	waitImage      string
	waitTimeout    int
}

func newPytorch(args []string, _ Env) (Plugin, error) {
	p := &pytorch{}
	p.ignored = parseArgs(args, func(fs *flag.FlagSet) {
		fs.StringVar(&p.master, "master", "master", "name of the master task")
		fs.StringVar(&p.worker, "worker", "worker", "name of the worker task")
		fs.IntVar(&p.port, "port", 23456, "port of the master")
		fs.BoolVar(&p.wait, "wait-master-enabled", false, "give worker pods an init container that waits for the master")
		fs.StringVar(&p.waitImage, "wait-master-image", DefaultWaitImage, "image of the wait-for-master init container")
		fs.IntVar(&p.waitTimeout, "wait-master-timeout", defaultWaitTimeout, "seconds a worker waits for the master")
	})
	err := checkPort("port", p.port)
	if p.wait && p.waitImage == "" {
		err = errors.Join(err, errors.New("--wait-master-image is empty"))
	}
	return p, err
}

func (p *pytorch) Name() string { return "pytorch" }

// OnPodCreate leaves the pod alone when the Job has no master task, as Volcano does.
func (p *pytorch) OnPodCreate(pod *corev1.Pod, job *batch.Job) error {
	master := findTask(job, p.master)
	if master == nil {
		return nil
	}
	masterAddr := hostOf(job, master, 0).fqdn()
	worldSize := state.SpecOf(job).Replicas() // saturated, never wrapped
	vars := []corev1.EnvVar{
		{Name: EnvMasterAddr, Value: masterAddr},
		{Name: EnvMasterPort, Value: strconv.Itoa(p.port)},
		{Name: EnvWorldSize, Value: strconv.Itoa(int(worldSize))},
	}
	switch taskOf(pod) {
	case p.worker:
		index, err := indexOf(pod)
		if err != nil {
			return err
		}
		vars = append(vars, corev1.EnvVar{Name: EnvRank, Value: strconv.Itoa(index + 1)})
		if p.wait {
			p.addWaitForMaster(pod, masterAddr)
		}
	case p.master:
		vars = append(vars, corev1.EnvVar{Name: EnvRank, Value: "0"})
	}
	openPort(pod.Spec.Containers, "pytorchjob-port", p.port)
	addEnv(pod, false, vars...)
	return nil
}

// addWaitForMaster appends the wait-for-master init container to a worker pod, unless the
// template already has a container of that name (two would make the pod invalid).
func (p *pytorch) addWaitForMaster(pod *corev1.Pod, masterAddr string) {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == WaitForMasterName {
			return
		}
	}
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
		Name:            WaitForMasterName,
		Image:           p.waitImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"sh", "-c", WaitForMasterScript(masterAddr, p.port, p.waitTimeout)},
	})
}

// WaitForMasterScript is the shell script of the wait-for-master init container: it tries the
// master's port every 2 seconds (with nc, else bash's /dev/tcp) and exits 1 once timeout
// seconds have gone by without an answer.
func WaitForMasterScript(addr string, port, timeout int) string {
	return fmt.Sprintf(`addr=%s port=%d timeout=%d waited=0
echo "waiting up to ${timeout}s for the master at ${addr}:${port}"
until { nc -z "$addr" "$port" || echo > "/dev/tcp/$addr/$port"; } 2>/dev/null; do
  if [ "$waited" -ge "$timeout" ]; then
    echo "the master at ${addr}:${port} did not answer in ${timeout}s"
    exit 1
  fi
  sleep 2
  waited=$((waited + 2))
done
echo "the master at ${addr}:${port} answers"`, shellQuote(addr), port, timeout)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (p *pytorch) OnJobAdd(*batch.Job) (Changes, error)    { return Changes{}, nil }
func (p *pytorch) OnJobUpdate(*batch.Job) (Changes, error) { return Changes{}, nil }
func (p *pytorch) OnJobDelete(*batch.Job) (Changes, error) { return Changes{}, nil }
