package guard

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

var containOnce sync.Once

// ContainClientGo makes client-go's recover (utilruntime.HandleCrash) log and
// count a panic instead of re-panicking, for the whole process; call it once
// at start, before any informer runs. Later calls do nothing.
//
// Both it and Handler/Transform are needed. Handler and Transform recover
// where ringfire's code is called, with the object's key, and quarantine it;
// but client-go runs more of its own goroutines under HandleCrash (the
// reflector, the listener's buffer, the event broadcaster) that no wrapper
// reaches, and with ReallyCrash at its default, true, any panic in them ends
// the process. A panic counted under component "client-go" is one no wrapper
// saw: a bug to report. client-go skips the notification that panicked and,
// for a listener, waits a second before its next one.
func ContainClientGo(log hclog.Logger) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	containOnce.Do(func() {
		utilruntime.ReallyCrash = false
		utilruntime.PanicHandlers = append(utilruntime.PanicHandlers, func(_ context.Context, p any) {
			panics.WithLabelValues(ClientGo).Inc()
			log.Error("client-go recovered a panic in one of its goroutines; the replica goes on (client-go logged the stack)",
				"panic", fmt.Sprint(p))
		})
	})
}
