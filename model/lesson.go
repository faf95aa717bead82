package model

// The lesson's three window shapes at one nominal limit (600 requests/minute).
var (
	LessonFixed   = Policy{Algorithm: FixedWindow, Limit: 600, WindowS: 60}
	LessonSliding = Policy{Algorithm: SlidingWindow, Limit: 600, WindowS: 60}
	LessonBucket  = Policy{Algorithm: TokenBucket, Rate: 10, Capacity: 900}
)

// The values the lesson's tables sweep.
var (
	LessonLimits     = []int64{600, 800, 1000, 1240, 1500} // Table 2, sliding window 60 s
	LessonCapacities = []int64{200, 400, 600, 900, 1200}   // Table 2, token bucket 10/s
	LessonDesignLims = []int64{600, 540, 480, 360}         // Table 3, sliding window 60 s
)

// Label is a short human name for a policy, e.g. "sliding window 60 s".
func (p Policy) Label() string {
	if d := p.Algorithm.Describe(); d != nil && d.Label != nil {
		return d.Label(p)
	}
	return p.String()
}

// Shape is one policy's outcome in the lesson's tables.
type Shape struct {
	Policy Policy
	Outcome
}

// SweepRow is one row of a one-parameter sweep: the swept value, the outcome,
// and the focus clients' admitted and cut requests.
type SweepRow struct {
	Value        int64
	Outcome      Outcome
	FocusAdmit   int64
	FocusCut     int64
	FocusOffered int64
}

// Lesson holds every figure of the lesson's Tables 1–3 for a workload.
type Lesson struct {
	Workload *Workload
	Shapes   []Shape // Table 1 and 3: fixed, sliding, bucket

	// Table 2: the price of raising the limit. Focus: abusive clients of stage
	// code (the login attempts).
	LimitSweep    []SweepRow // sliding window 60 s over LessonLimits
	CapacitySweep []SweepRow // token bucket 10/s over LessonCapacities
	CodeClients   []int

	// Table 3b: the limit needed to see design-stage abuse (the bulk download).
	DesignSweep   []SweepRow // sliding window 60 s over LessonDesignLims
	DesignClients []int
}

// ComputeLesson computes the lesson's tables over w.
func ComputeLesson(w *Workload) *Lesson {
	l := &Lesson{Workload: w}
	for i, c := range w.Scenario.Clients {
		if c.Class != Abusive {
			continue
		}
		switch c.Stage {
		case StageCode:
			l.CodeClients = append(l.CodeClients, i)
		case StageDesign:
			l.DesignClients = append(l.DesignClients, i)
		}
	}
	sim := w.NewSimulator()
	run := func(p Policy) Outcome {
		var o Outcome
		sim.Run(p, &o)
		return o
	}
	for _, p := range []Policy{LessonFixed, LessonSliding, LessonBucket} {
		l.Shapes = append(l.Shapes, Shape{Policy: p, Outcome: run(p)})
	}
	row := func(v int64, p Policy, focus []int) SweepRow {
		r := SweepRow{Value: v, Outcome: run(p)}
		for _, i := range focus {
			c := r.Outcome.Clients[i]
			r.FocusAdmit += c.Admitted
			r.FocusCut += c.Cut()
			r.FocusOffered += c.Offered
		}
		return r
	}
	for _, v := range LessonLimits {
		p := LessonSliding
		p.Limit = v
		l.LimitSweep = append(l.LimitSweep, row(v, p, l.CodeClients))
	}
	for _, v := range LessonCapacities {
		p := LessonBucket
		p.Capacity = v
		l.CapacitySweep = append(l.CapacitySweep, row(v, p, l.CodeClients))
	}
	for _, v := range LessonDesignLims {
		p := LessonSliding
		p.Limit = v
		l.DesignSweep = append(l.DesignSweep, row(v, p, l.DesignClients))
	}
	return l
}
