package model

// weighedBox is the penalty box over a limiter that weighs requests (a
// policy with costs or count_if, whose decider is a RequestDecider): a
// request during the key's block is rejected and not shown to the
// limiter; otherwise the limiter weighs it (its cost, its status), and its
// rejection starts a block. A fail2ban jail is such a box over a window
// that counts only the failures (count_if).
type weighedBox struct {
	*penaltyBox
	rd RequestDecider // penaltyBox.inner, weighing
}

var (
	_ decider        = (*weighedBox)(nil)
	_ RequestDecider = (*weighedBox)(nil)
	_ blockCounter   = (*weighedBox)(nil)
)

// AllowRequest is Allow for a request costing cost units whose response
// has status.
func (w *weighedBox) AllowRequest(t, cost int64, status int) bool {
	b := w.penaltyBox
	b.started = false
	if b.in(t) {
		return false
	}
	if w.rd.AllowRequest(t, cost, status) {
		return true
	}
	b.start(t)
	return false
}

// fitsRequest is false during the key's block, the limiter's otherwise.
func (w *weighedBox) fitsRequest(t, cost int64, status int) bool {
	if w.blocked && t < w.until {
		return false
	}
	return fitsRequest(w.inner, t, cost, status)
}

func (w *weighedBox) cloneInto(dst decider) decider {
	c, _ := dst.(*weighedBox)
	var into decider
	if c != nil {
		into = c.penaltyBox
	} else {
		c = &weighedBox{}
	}
	c.penaltyBox = w.penaltyBox.cloneInto(into).(*penaltyBox)
	c.rd = c.penaltyBox.inner.(RequestDecider)
	return c
}
