package cronjobtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringfire/ringfire/e2e/stack"
	"github.com/ringfire/ringfire/e2e/vcjob"
)

// foreignJob: a Job that holds the name of the next schedule time's Job and is not the
// CronJob's (made by someone else) is read when the create meets it, and left alone: that
// run is skipped with a ForeignJob Event.
func foreignJob(t *testing.T, s *stack.Stack) {
	const ns, name = "cron-foreign", "foreign"
	next := time.Now().Truncate(time.Minute).Add(time.Minute)
	if time.Until(next) < 10*time.Second {
		next = next.Add(time.Minute)
	}
	create(t, s, newCronJob(ns, name, "* * * * *", "5s"))
	taken := fmt.Sprintf("%s-%d", name, next.Unix()/60)
	other := vcjob.Create(t, s.Volcano, vcjob.New(ns, taken, vcjob.Task("main", 1, "10m", "")))

	stack.WaitFor(t, "a ForeignJob Event", time.Until(next.Add(60*time.Second)), func() (bool, string) {
		got := s.Events(ns, name, "ForeignJob")
		return len(got) > 0 && strings.Contains(got[0], taken), strings.Join(got, "; ")
	})
	job, err := s.Volcano.BatchV1alpha1().Jobs(ns).Get(t.Context(), taken, metav1.GetOptions{})
	if err != nil || job.UID != other.UID || metav1.GetControllerOf(job) != nil {
		t.Errorf("the Job %s was touched: %v", taken, err)
	}
}
