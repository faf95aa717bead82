package model

import (
	"math"
	"math/rand/v2"
	"slices"
)

// ArrivalProcess says how a client's requests are placed in time inside its
// segments.
type ArrivalProcess uint8

const (
	// Fluid is the lesson's model: the r requests of second t arrive together
	// at t seconds. Rates must be whole numbers. It runs the per-second kernels.
	Fluid ArrivalProcess = iota
	// Uniform spreads a segment's round((t1-t0)·r) requests evenly: request j
	// of n arrives at t0 + (j+½)·(t1-t0)/n. With a whole rate r that is
	// (i+½)/r into each second. Deterministic.
	Uniform
	// Poisson makes each segment a Poisson process of rate r.
	Poisson
	// Clustered makes each segment a Poisson process of bursts at rate
	// r/burst_size; each burst brings burst_size requests, each placed
	// uniformly in [start, start + spread_s). Times past the segment's end
	// wrap around to its start, so the mean rate stays r.
	Clustered
)

var arrivalNames = []string{"fluid", "uniform", "poisson", "clustered"}

func (a ArrivalProcess) String() string {
	if int(a) < len(arrivalNames) {
		return arrivalNames[a]
	}
	return "unknown"
}

// ParseArrivalProcess returns the process with the given name.
func ParseArrivalProcess(name string) (ArrivalProcess, bool) {
	i := slices.Index(arrivalNames, name)
	return ArrivalProcess(i), i >= 0
}

// Arrivals is a scenario's arrival process and its parameters.
type Arrivals struct {
	Process   ArrivalProcess
	BurstSize int     // clustered: requests per burst, >= 1
	SpreadS   float64 // clustered: time over which a burst's requests spread, seconds, >= 0
}

// Stochastic reports whether realisations differ between replicates.
func (a Arrivals) Stochastic() bool { return a.Process == Poisson || a.Process == Clustered }

// maxSpreadS bounds a clustered burst's spread (one hour).
const maxSpreadS = 3600

// validate checks the arrival parameters (paths below "arrivals").
func (a Arrivals) validate() error {
	switch a.Process {
	case Fluid, Uniform, Poisson:
		if a.BurstSize != 0 {
			return fieldErr("arrivals.burst_size", "only clustered arrivals take burst_size (process is %s)", a.Process)
		}
		if a.SpreadS != 0 {
			return fieldErr("arrivals.spread_s", "only clustered arrivals take spread_s (process is %s)", a.Process)
		}
	case Clustered:
		if a.BurstSize < 1 {
			return fieldErr("arrivals.burst_size", "must be a whole number >= 1 of requests per burst, got %d", a.BurstSize)
		}
		if !(a.SpreadS >= 0 && a.SpreadS <= maxSpreadS) {
			return fieldErr("arrivals.spread_s", "must be between 0 and %d seconds, got %v", maxSpreadS, a.SpreadS)
		}
	default:
		return fieldErr("arrivals.process", "unknown arrival process %d (fluid | uniform | poisson | clustered)", a.Process)
	}
	return nil
}

// Stochastic reports whether the workload's realisations differ between
// replicates (poisson, clustered, or keys spread at random), so that
// replicates matter to a sweep.
func (w *Workload) Stochastic() bool {
	return w.Scenario.Arrivals.Stochastic() || w.Scenario.keysStochastic() || w.Scenario.failsStochastic()
}

// Realise returns every client's request times (ns since the start, sorted)
// in realisation (seed, replicate), reusing dst's slices. The result depends
// only on the scenario, seed, replicate and client index: whoever asks, in
// whatever order, gets the same requests (common random numbers). Fluid
// arrivals give the per-second batches; fluid and uniform ignore seed and
// replicate.
func (w *Workload) Realise(seed uint64, replicate int, dst [][]int64) [][]int64 {
	sc := w.Scenario
	dst = slices.Grow(dst[:0], len(sc.Clients))[:len(sc.Clients)]
	pcg := rand.NewPCG(0, 0)
	rng := rand.New(pcg)
	for i := range sc.Clients {
		pcg.Seed(seed, streamSeed(replicate, sc.stream(i)))
		dst[i] = sc.Arrivals.appendTimes(dst[i][:0], &sc.Clients[i], rng)
	}
	return dst
}

// streamSeed is the second PCG seed of client i in a replicate
// (splitmix64 of both, so that neighbouring streams are unrelated).
func streamSeed(replicate, client int) uint64 {
	z := uint64(uint32(replicate))<<32 | uint64(uint32(client))
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// appendTimes appends client c's request times under a to dst, sorted.
func (a Arrivals) appendTimes(dst []int64, c *Client, rng *rand.Rand) []int64 {
	first := len(dst)
	for _, g := range c.Segments {
		if g.Rate <= 0 {
			continue
		}
		t0, t1 := float64(g.T0), float64(g.T1)
		switch a.Process {
		case Fluid:
			for s := g.T0; s < g.T1; s++ {
				for range int(g.Rate) {
					dst = append(dst, int64(s)*secondNs)
				}
			}
		case Uniform:
			n := int64(math.Round((t1 - t0) * g.Rate))
			step := (t1 - t0) / float64(n) * 1e9
			for j := range n {
				dst = append(dst, int64(g.T0)*secondNs+int64((float64(j)+0.5)*step))
			}
		case Poisson:
			for t := t0 + rng.ExpFloat64()/g.Rate; t < t1; t += rng.ExpFloat64() / g.Rate {
				dst = append(dst, int64(t*1e9))
			}
		case Clustered:
			burstRate := g.Rate / float64(a.BurstSize)
			for s := t0 + rng.ExpFloat64()/burstRate; s < t1; s += rng.ExpFloat64() / burstRate {
				for range a.BurstSize {
					t := s + a.SpreadS*rng.Float64()
					if t >= t1 {
						t = t0 + math.Mod(t-t0, t1-t0)
					}
					dst = append(dst, int64(t*1e9))
				}
			}
		}
	}
	slices.Sort(dst[first:])
	return dst
}
