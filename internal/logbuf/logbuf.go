// Package logbuf is a text buffer that many goroutines may write and read at
// once: tests hand it to a logger and then look for a line.
package logbuf

import (
	"strings"
	"sync"
)

// Buffer collects what is written to it. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
