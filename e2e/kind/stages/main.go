// Command stages prints the KWOK Stage objects of ringfire's test harness
// (fake nodes Ready at once; pods that run for their ringfire.io/e2e-duration
// and end with their ringfire.io/e2e-exit-code), for kubectl apply -f -.
package main

import (
	"flag"
	"os"
	"time"

	"github.com/ringfire/ringfire/internal/devcluster"
)

func main() {
	d := flag.Duration("default-duration", time.Second, "how long a pod runs when it does not say")
	flag.Parse()
	os.Stdout.Write(devcluster.KWOKStages(*d))
}
