// Package queuetest holds the end-to-end tests of the Queue and PodGroup controllers: a real API
// server with the Volcano CRDs, KWOK nodes, the stand-in scheduler, and both controllers running
// in the test process beside a ringfire stack, holding every slot.
package queuetest
