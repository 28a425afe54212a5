package cache

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// packed is a whole Job in little room: its JSON, deflated. The Jobs of the
// slots a replica does not hold are kept as summaries for reading and packed
// for a gain of their slot, which then has every Job of the slot in full at
// once, from memory, instead of listing every Job of the cluster from the
// API server (Jobs carry no slot label to list by). A failover or rebalance
// at 10,000 Jobs would otherwise make each gaining replica list them all.
type packed []byte

// packer packs Jobs with one deflate writer, made at its first use and
// reused: a writer holds about a megabyte of tables, and Jobs packs under its
// lock, one Job at a time. A pool of writers instead keeps up to two per
// processor alive (its own and the last collection's), megabytes that every
// replica pays whatever slots it holds. Not safe for concurrent use.
type packer struct {
	w   *flate.Writer
	buf bytes.Buffer
}

// pack deflates the JSON of job.
func (k *packer) pack(job *batch.Job) (packed, error) {
	raw, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	k.buf.Reset()
	if k.w == nil {
		k.w, _ = flate.NewWriter(&k.buf, flate.BestSpeed) // BestSpeed is a valid level
	} else {
		k.w.Reset(&k.buf)
	}
	if _, err := k.w.Write(raw); err != nil {
		return nil, err
	}
	if err := k.w.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(k.buf.Bytes()), nil // no spare capacity kept
}

// inflaters are deflate readers for unpack, reused: a gain unpacks every Job
// of its slots, thousands at a time, and each reader holds a 32 KiB window.
var inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

// unpack returns the Job p holds.
func (p packed) unpack() (*batch.Job, error) {
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(p), nil); err != nil {
		return nil, fmt.Errorf("inflate a packed job: %w", err)
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("inflate a packed job: %w", err)
	}
	job := &batch.Job{}
	if err := json.Unmarshal(raw, job); err != nil {
		return nil, fmt.Errorf("decode a packed job: %w", err)
	}
	return job, nil
}

// same reports whether p and q are the one packing (not just equal bytes):
// a fill that unpacked p may store its Job only if the summary still holds p.
func (p packed) same(q packed) bool {
	return len(p) > 0 && len(q) == len(p) && &p[0] == &q[0]
}
