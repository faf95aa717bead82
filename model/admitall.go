package model

// AdmitByLabel offers one key's requests (times ts, ns, not decreasing;
// labels[j] is request j's label) to d, which the caller has Reset, and adds
// the admitted ones to admitted by label. The decisions are d.Allow's; for
// this package's Deciders the loop calls Allow on the concrete type, which
// the compiler inlines, instead of through the interface (the log replay's
// inner loop, ingest.ReplayMany).
func AdmitByLabel(d interface{ Allow(int64) bool }, ts []int64, labels []Stage, admitted *[4]int64) {
	labels = labels[:len(ts)]
	if c, ok := d.(labelCounter); ok {
		c.countByLabel(ts, labels, admitted)
		return
	}
	for j, t := range ts {
		if d.Allow(t) {
			admitted[labels[j]&3]++
		}
	}
}

// labelCounter is a decider with its own AdmitByLabel loop (see eventCounter).
type labelCounter interface {
	countByLabel(ts []int64, labels []Stage, admitted *[4]int64)
}
