package model

import (
	"cmp"
	"slices"
)

// Lockstep decides many policies of one state-dependent algorithm over one
// key's requests at once: the policies' parameters and states are held as
// structure of arrays, and each request (its time and label read once) is
// decided by every policy in turn, with no interface call per decision.
// Where a step is a few instructions (gcra, nginx) the order is turned
// round within chunks of lockstepChunk requests, each policy over the chunk
// with its state in registers, which measured faster (BenchmarkReplayBatch).
// Decisions are exactly those of each policy's Decider (NewDeciderAt with the
// same origin), which share their step arithmetic with it.
//
// Use: AdmitKey with each key's requests (the replay), or Reset at each key
// and then AdmitByLabel over its requests in order, in one call or in
// consecutive chunks.
type Lockstep interface {
	// Len is the number of policies.
	Len() int
	// Reset returns every policy to the state of a key never seen.
	Reset()
	// AdmitByLabel offers requests at times ts (ns since the origin, not
	// decreasing, and not before the previous call's since Reset) labelled
	// labels to every policy k, adding the admitted ones by label to
	// admitted[k] (len(admitted) >= Len()).
	AdmitByLabel(ts []int64, labels []Stage, admitted [][4]int64)
	// AdmitKey is Reset, then AdmitByLabel over all of one key's requests;
	// offered is their count by label. Knowing the whole key, a lockstep
	// settles at once the policies that admit every request of it (see
	// sortedPolicies) and steps only the others.
	AdmitKey(ts []int64, labels []Stage, offered *[4]int64, admitted [][4]int64)
}

// sortedPolicies orders a lockstep's policies by group, policies whose
// every-request-admitted test is one pass over a key (one window, one
// rate), and within a group by size (limit, capacity). Where every admitted
// request leaves the next state as it would be had nothing been rejected,
// the state of a key that no policy has limited yet does not depend on the
// size, so one pass gives the least size that admits the whole key, and
// only the policies below it need stepping: under a skewed key
// distribution most keys are far below most limits.
type sortedPolicies struct {
	orig   []int      // sorted position -> the caller's policy index
	groups [][2]int   // [lo, hi) of each group, in sorted positions
	adm    [][4]int64 // admissions by sorted position, per call
}

// sortPolicies returns ps sorted by (group, size) and the order, where
// group and size are cmp-ordered keys of a policy.
func sortPolicies(ps []Policy, group func(Policy) [2]int64, size func(Policy) int64) ([]Policy, sortedPolicies) {
	n := len(ps)
	sp := sortedPolicies{orig: make([]int, n), adm: make([][4]int64, n)}
	for k := range sp.orig {
		sp.orig[k] = k
	}
	slices.SortStableFunc(sp.orig, func(a, b int) int {
		ga, gb := group(ps[a]), group(ps[b])
		if c := cmp.Compare(ga[0], gb[0]); c != 0 {
			return c
		}
		if c := cmp.Compare(ga[1], gb[1]); c != 0 {
			return c
		}
		return cmp.Compare(size(ps[a]), size(ps[b]))
	})
	sorted := make([]Policy, n)
	for i, k := range sp.orig {
		sorted[i] = ps[k]
	}
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && group(sorted[hi]) == group(sorted[lo]) {
			hi++
		}
		sp.groups = append(sp.groups, [2]int{lo, hi})
		lo = hi
	}
	return sorted, sp
}

// admitAll settles sorted positions [lo, hi): they admit every request
// offered.
func (sp *sortedPolicies) admitAll(lo, hi int, offered *[4]int64) {
	for k := lo; k < hi; k++ {
		sp.adm[k] = *offered
	}
}

// fold adds the admissions by sorted position to admitted by the caller's
// index and clears them.
func (sp *sortedPolicies) fold(admitted [][4]int64) {
	for i, k := range sp.orig {
		a := &sp.adm[i]
		admitted[k][0] += a[0]
		admitted[k][1] += a[1]
		admitted[k][2] += a[2]
		admitted[k][3] += a[3]
		*a = [4]int64{}
	}
}

// maxLockstepLog bounds the log slots (the sum of the limits) of a
// sliding_window or concurrency lockstep, 8 MiB of times; larger batches
// run on Deciders.
const maxLockstepLog = 1 << 20

// NewLockstep returns a Lockstep for valid policies ps, all of one
// algorithm, with event times in ns since originNs (see NewDeciderAt). ok is
// false where there is none and Deciders must be used: mixed or count-based
// algorithms (those have their one-pass replay, CountFunc), distributed
// policies, and sliding logs whose limits add up to more than
// maxLockstepLog.
func NewLockstep(ps []Policy, originNs int64) (Lockstep, bool) {
	if len(ps) == 0 {
		return nil, false
	}
	alg := ps[0].Algorithm
	for _, p := range ps {
		if p.Algorithm != alg || p.Distributed() || p.modified() {
			return nil, false
		}
	}
	if f := alg.Describe().lockstep; f != nil {
		return f(ps, originNs)
	}
	return nil, false
}

// lockstepChunk is how many requests a policy-outer lockstep offers each
// policy in turn (4 KiB of times, in the L1 cache).
const lockstepChunk = 512
