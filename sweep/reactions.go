package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
	"go.yaml.in/yaml/v3"
)

// Points and clients columns of a run whose scenario has clients that react
// to rejections (docs/retries.md). They follow the other columns and are
// written only for such runs, so every other run's files stay as they were.
var (
	reactionInts = []intMetric{
		{"attempts", func(m *model.Metrics) *int64 { return &m.Reactions.Attempts }},
		{"attempts_legit", func(m *model.Metrics) *int64 { return &m.Reactions.AttemptsLegit }},
		{"attempts_abusive", func(m *model.Metrics) *int64 { return &m.Reactions.AttemptsAbusive }},
		{"intended_served_legit", func(m *model.Metrics) *int64 { return &m.Reactions.IntendedServedLegit }},
		{"intended_served_abusive", func(m *model.Metrics) *int64 { return &m.Reactions.IntendedServedAbusive }},
		{"gave_up", func(m *model.Metrics) *int64 { return &m.Reactions.GaveUp }},
		{"throttled", func(m *model.Metrics) *int64 { return &m.Reactions.Throttled }},
	}
	reactionFloats = []floatMetric{
		{"amplification_legit", func(m *model.Metrics) *float64 { return &m.Reactions.AmplificationLegit }},
		{"amplification_abusive", func(m *model.Metrics) *float64 { return &m.Reactions.AmplificationAbusive }},
		{"legit_added_delay_mean_s", func(m *model.Metrics) *float64 { return &m.Reactions.LegitDelayMeanS }},
		{"legit_added_delay_p99_s", func(m *model.Metrics) *float64 { return &m.Reactions.LegitDelayP99S }},
	}
	// reactionClientInts and reactionClientFloats are the clients columns.
	reactionClientInts = []struct {
		name  string
		field func(*model.ClientReaction) int64
	}{
		{"attempts", func(c *model.ClientReaction) int64 { return c.Attempts }},
		{"gave_up", func(c *model.ClientReaction) int64 { return c.GaveUp }},
		{"throttled", func(c *model.ClientReaction) int64 { return c.Throttled }},
	}
	reactionClientFloats = []struct {
		name  string
		field func(*model.ClientReaction) float64
	}{
		{"added_delay_mean_s", func(c *model.ClientReaction) float64 { return c.MeanS }},
		{"added_delay_p99_s", func(c *model.ClientReaction) float64 { return c.P99S }},
	}
)

// specReacts reports whether the spec's clients react: a scenario's
// clients, a log's keys by reaction rule, or an overlay's attackers.
func specReacts(spec *Spec) bool {
	return spec.Scenario != nil && spec.Scenario.Reacts() || spec.Traffic != nil && spec.Traffic.Reacts()
}

// withReactions adds the reaction columns to the points and clients
// schemas when react is set.
func withReactions(points, clients *arrow.Schema, react bool) (*arrow.Schema, *arrow.Schema) {
	if !react {
		return points, clients
	}
	pf, cf := points.Fields(), clients.Fields()
	for _, m := range reactionInts {
		pf = append(pf, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Int64})
	}
	for _, m := range reactionFloats {
		pf = append(pf, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Float64})
	}
	for _, m := range reactionClientInts {
		cf = append(cf, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Int64})
	}
	for _, m := range reactionClientFloats {
		cf = append(cf, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Float64})
	}
	pm, cm := points.Metadata(), clients.Metadata()
	return arrow.NewSchema(pf, &pm), arrow.NewSchema(cf, &cm)
}

// reactColumns hold a part's reaction columns, as words (int64 or float64
// bits): per points column each row's value, per clients column each
// client row's.
type reactColumns struct {
	on      bool
	points  [][]uint64
	clients [][]uint64
}

// reset sizes the columns for rows points rows of nc clients each.
func (c *reactColumns) reset(rows, nc int) {
	if !c.on {
		return
	}
	c.points = grow(c.points, len(reactionInts)+len(reactionFloats))
	for i := range c.points {
		c.points[i] = grow(c.points[i], rows)
	}
	c.clients = grow(c.clients, len(reactionClientInts)+len(reactionClientFloats))
	for i := range c.clients {
		c.clients[i] = grow(c.clients[i], rows*nc)
	}
}

// set stores row's reaction measures: m's and the clients' cr.
func (c *reactColumns) set(row int, m *model.Metrics, cr []model.ClientReaction) {
	if !c.on {
		return
	}
	k := 0
	for _, im := range reactionInts {
		c.points[k][row] = uint64(*im.field(m))
		k++
	}
	for _, fm := range reactionFloats {
		c.points[k][row] = math.Float64bits(*fm.field(m))
		k++
	}
	base := row * len(cr)
	for i := range cr {
		k := 0
		for _, ci := range reactionClientInts {
			c.clients[k][base+i] = uint64(ci.field(&cr[i]))
			k++
		}
		for _, cf := range reactionClientFloats {
			c.clients[k][base+i] = math.Float64bits(cf.field(&cr[i]))
			k++
		}
	}
}

// pointArrays appends the points columns of rows [lo, lo+n) to cols.
func (c *reactColumns) pointArrays(cols []arrow.Array, lo, n int) []arrow.Array {
	if !c.on {
		return cols
	}
	for k := range c.points {
		typ := arrow.DataType(arrow.PrimitiveTypes.Int64)
		if k >= len(reactionInts) {
			typ = arrow.PrimitiveTypes.Float64
		}
		cols = append(cols, window(typ, uint64Bytes(c.points[k]), nil, 0, lo, n))
	}
	return cols
}

// clientArrays appends the clients columns of client rows [lo, lo+n).
func (c *reactColumns) clientArrays(cols []arrow.Array, lo, n int) []arrow.Array {
	if !c.on {
		return cols
	}
	for k := range c.clients {
		typ := arrow.DataType(arrow.PrimitiveTypes.Int64)
		if k >= len(reactionClientInts) {
			typ = arrow.PrimitiveTypes.Float64
		}
		cols = append(cols, window(typ, uint64Bytes(c.clients[k]), nil, 0, lo, n))
	}
	return cols
}

// reactingSim is a pointSim that gives the clients' reactions of its last
// run.
type reactingSim interface {
	clientReactions() []model.ClientReaction
}

func (s *scenarioSim) clientReactions() []model.ClientReaction { return s.out.ClientReactions }

// setReactions stores the reaction measures of row, simulated by sim.
func (r *partResult) setReactions(row int, m *model.Metrics, sim pointSim) {
	if !r.react.on {
		return
	}
	rs, ok := sim.(reactingSim)
	if !ok {
		panic("sweep: a run with reactions on a source without them")
	}
	r.react.set(row, m, rs.clientReactions())
}

// checkReactions refuses a spec whose clients react and whose sweep takes
// a deployment the simulation of reactions does not model (two keys at
// once, several nodes, shared state); sw is the sweep node, for lines.
// Costs and count_if are modelled: a retry repeats its request, so it
// costs what the request cost and is answered as the request was.
func checkReactions(s *Spec, sw *yaml.Node) error {
	if !specReacts(s) {
		return nil
	}
	items, _ := yamlx.Seq(sw, "sweep")
	at := func(i int) *yaml.Node {
		if i < len(items) {
			return items[i]
		}
		return sw
	}
	why := "the scenario's clients react: on_reject or throttle"
	if s.Traffic != nil {
		why = "the log's clients react: traffic.reactions or an overlay client's on_reject or throttle"
	}
	for i, e := range s.Entries {
		for _, ax := range e.Axes {
			for _, v := range ax.Values {
				p := e.newPolicy() // with an all_of's components, whose keys count too
				p.Set(ax.Param, v)
				if err := model.ReactionsSupport(p); err != nil {
					path := fmt.Sprintf("sweep[%d].%s", i, ax.Param)
					return yamlx.Errorf(yamlx.Locate(at(i), ax.Param), path, "%s (%s)", fieldMsg(err), why)
				}
			}
		}
	}
	return nil
}

// fieldMsg is a *model.FieldError's message without its path.
func fieldMsg(err error) string {
	var fe *model.FieldError
	if errors.As(err, &fe) {
		return fe.Msg
	}
	return err.Error()
}

// readReactions fills rows' reaction measures from points file f when it
// has the reaction columns (rows: the file's rows, in file order).
func readReactions(ctx context.Context, f string, rows []PointRow) error {
	schema, err := fileSchema(f)
	if err != nil || len(schema.FieldIndices(reactionInts[0].name)) == 0 {
		return nil // the main scan reported a damaged file already
	}
	var cols []string
	for _, m := range reactionInts {
		cols = append(cols, m.name)
	}
	for _, m := range reactionFloats {
		cols = append(cols, m.name)
	}
	i := 0
	return ScanFile(ctx, f, cols, func(rec arrow.RecordBatch) error {
		c := rec.Columns()
		for j := range int(rec.NumRows()) {
			if i >= len(rows) {
				return inputErrorf("%s: more reaction rows than points rows", f)
			}
			m := &rows[i].Metrics
			m.Reactions.Measured = true
			k := 0
			for _, im := range reactionInts {
				v, ok := Int(c[k], j)
				if err := checkRangeOK(f, rows[i].PointID, im.name, float64(v), ok); err != nil {
					return err
				}
				*im.field(m) = v
				k++
			}
			for _, fm := range reactionFloats {
				v, ok := Float(c[k], j)
				if err := checkRangeOK(f, rows[i].PointID, fm.name, v, ok); err != nil {
					return err
				}
				*fm.field(m) = v
				k++
			}
			i++
		}
		return nil
	})
}

// HasReactions reports whether points or clients file f has the reaction
// columns (its scenario's clients react).
func HasReactions(f string) bool {
	schema, err := fileSchema(f)
	return err == nil && len(schema.FieldIndices(reactionInts[0].name)) == 1
}
