package report

import (
	"fmt"

	"github.com/ratesweep/ratesweep/model"
)

// Runs whose scenario has clients that react to rejections (docs/retries.md)
// carry reaction columns; the report reads the attempts and adds each
// frontier point's amplification (attempts per intended request) and the
// added latency of legitimate requests to the frontier table.

// reactionColumns are the points columns the report reads from such runs.
var reactionColumns = []string{"attempts_legit", "attempts_abusive", "legit_added_delay_p99_s"}

// readReactions sets m's reaction measures from the row's reaction columns
// c (in reactionColumns' order).
func readReactions(m *model.Metrics, c []int64, p99 float64) {
	m.Reactions.Measured = true
	m.Reactions.AttemptsLegit, m.Reactions.AttemptsAbusive = c[0], c[1]
	m.Reactions.LegitDelayP99S = p99
}

// addReactions pools one more replicate's reaction measures into p: the
// attempts are summed, the added latency's p99 is the mean over replicates.
func (p *Point) addReactions(m *model.Metrics) {
	if !m.Reactions.Measured {
		return
	}
	r := &p.Reactions
	n := float64(p.Replicates) // already counts m
	r.Measured = true
	r.AttemptsLegit += m.Reactions.AttemptsLegit
	r.AttemptsAbusive += m.Reactions.AttemptsAbusive
	r.LegitDelayP99S += (m.Reactions.LegitDelayP99S - r.LegitDelayP99S) / n
	r.AmplificationLegit = ratio(r.AttemptsLegit, p.OfferedLegit)
	r.AmplificationAbusive = ratio(r.AttemptsAbusive, p.OfferedAbusive)
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// reactionHeaders are the frontier table's columns for runs whose clients
// react.
var reactionHeaders = []string{"amplification legit", "amplification abusive", "legit added p99 s"}

// reactionCells are q's cells under reactionHeaders.
func reactionCells(q *Point) []any {
	r := &q.Reactions
	return []any{fmt.Sprintf("%.2f×", r.AmplificationLegit), fmt.Sprintf("%.2f×", r.AmplificationAbusive), fmt.Sprintf("%.2f", r.LegitDelayP99S)}
}
