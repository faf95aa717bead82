package ingest

import (
	"fmt"

	"github.com/ratesweep/ratesweep/model"
)

// KeyPartition selects the keys of one key shard: slice Index of Count.
// A key belongs to slice KeyHash(key) mod Count, where key is the key's
// bytes as read from the log (its fields joined by a space, before any
// UTF-8 repair). The zero value keeps every key.
type KeyPartition struct{ Index, Count int }

// All reports whether p keeps every key.
func (p KeyPartition) All() bool { return p.Count <= 1 }

func (p KeyPartition) String() string { return fmt.Sprintf("%d/%d", p.Index, max(p.Count, 1)) }

// Keeps reports whether the key with bytes key belongs to p.
func (p KeyPartition) Keeps(key []byte) bool {
	return p.All() || KeyHash(key)%uint64(p.Count) == uint64(p.Index)
}

// KeyHash is the 64-bit FNV-1a hash of a key's bytes: offset basis
// 14695981039346656037, prime 1099511628211, one byte at a time. It depends
// on the key alone (no seed, no process state), so every machine and every
// release puts a key in the same shard.
func KeyHash(key []byte) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for _, c := range key {
		h ^= uint64(c)
		h *= prime
	}
	return h
}

// keyBytes appends the key of rec (the builder's key fields joined by a
// space) to buf.
func (b *builder) keyBytes(buf []byte, rec *Record) []byte {
	for i, f := range b.opt.Key {
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = appendField(buf, rec, f, b.opt.PathDepth)
	}
	return buf
}

// partitioned reports whether rec's key belongs to another key shard
// (Options.Partition); such a request counts in the log's accounting and
// its time span, but is not kept.
func (b *builder) partitioned(rec *Record, ns int64) bool {
	if b.opt.Partition.All() {
		return false
	}
	b.scratch = b.keyBytes(b.scratch[:0], rec)
	if b.opt.Partition.Keeps(b.scratch) {
		return false
	}
	b.others++
	b.otherMin = min(b.otherMin, ns)
	b.otherMax = max(b.otherMax, ns)
	return true
}

// emptyTraffic is the Traffic of a key shard that holds none of the log's
// keys: the log's time span, no keys.
func (b *builder) emptyTraffic() *Traffic {
	t := &Traffic{SubSecond: b.subSec, Stats: b.stats}
	t.Stats.Requests = b.others
	start := b.otherMin - b.otherMin%secondNs
	t.StartUnix = start / secondNs
	t.DurationS = int((b.otherMax-start)/secondNs) + 1
	t.offsets = []int64{0}
	return t
}

// StageClass is the class of a label: legit for model.NoStage, else abusive.
func StageClass(s model.Stage) model.Class {
	if s == model.NoStage {
		return model.Legit
	}
	return model.Abusive
}

// OtherRowName names the clients row of the keys of label s beyond the top
// keys (Rows).
func OtherRowName(s model.Stage) string {
	if s == model.NoStage {
		return "other keys (legit)"
	}
	return fmt.Sprintf("other keys (abusive, %s)", s)
}

// LabelRowName names the clients row of every key of label s when several
// logs are replayed (LabelRows).
func LabelRowName(s model.Stage) string {
	if s == model.NoStage {
		return "keys (legit)"
	}
	return fmt.Sprintf("keys (abusive, %s)", s)
}
