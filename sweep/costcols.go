package sweep

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/model"
)

// Points and clients columns of a run whose requests carry costs
// (docs/costs.md): the judged numbers in cost units beside their request
// twins. They follow the other columns (and the reaction columns) and are
// written only for such runs, so every other run's files stay as they were.
var (
	costMetrics = []intMetric{
		{"offered_legit_cost", func(m *model.Metrics) *int64 { return &m.Cost.OfferedLegit }},
		{"offered_abusive_cost", func(m *model.Metrics) *int64 { return &m.Cost.OfferedAbusive }},
		{"caught_cost", func(m *model.Metrics) *int64 { return &m.Cost.Caught }},
		{"missed_cost", func(m *model.Metrics) *int64 { return &m.Cost.Missed }},
		{"false_cut_cost", func(m *model.Metrics) *int64 { return &m.Cost.FalseCut }},
	}
	// costClientColumns are the clients columns: the cost units the row's
	// requests offered and had cut (twins of offered and cut).
	costClientColumns = []string{"offered_cost", "cut_cost"}
)

// CostColumns lists the points columns of a run whose requests carry
// costs, in column order.
func CostColumns() []string {
	out := make([]string, len(costMetrics))
	for i, m := range costMetrics {
		out[i] = m.name
	}
	return out
}

// CostTwin is the request metric whose cost total column name is
// (false_cut for false_cut_cost), or "" when name is no cost column.
func CostTwin(name string) string {
	for _, m := range costMetrics {
		if m.name == name {
			return name[:len(name)-len("_cost")]
		}
	}
	return ""
}

// withCosts adds the cost columns to the points and clients schemas when
// costed is set.
func withCosts(points, clients *arrow.Schema, costed bool) (*arrow.Schema, *arrow.Schema) {
	if !costed {
		return points, clients
	}
	pf, cf := points.Fields(), clients.Fields()
	for _, m := range costMetrics {
		pf = append(pf, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Int64})
	}
	for _, name := range costClientColumns {
		cf = append(cf, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64})
	}
	pm, cm := points.Metadata(), clients.Metadata()
	return arrow.NewSchema(pf, &pm), arrow.NewSchema(cf, &cm)
}

// costColumns hold a part's cost columns: per points column each row's
// value, per clients column each client row's.
type costColumns struct {
	on      bool
	points  [][]int64
	clients [][]int64
	scratch []model.ClientResult
}

// reset sizes the columns for rows points rows of nc clients each.
func (c *costColumns) reset(rows, nc int) {
	if !c.on {
		return
	}
	c.points = grow(c.points, len(costMetrics))
	for i := range c.points {
		c.points[i] = grow(c.points[i], rows)
	}
	c.clients = grow(c.clients, len(costClientColumns))
	for i := range c.clients {
		c.clients[i] = grow(c.clients[i], rows*nc)
	}
}

// set stores row's cost totals: m's and the clients' cc.
func (c *costColumns) set(row int, m *model.Metrics, cc []model.ClientResult) {
	for k, im := range costMetrics {
		c.points[k][row] = *im.field(m)
	}
	base := row * len(cc)
	for i := range cc {
		c.clients[0][base+i] = cc[i].Offered
		c.clients[1][base+i] = cc[i].Offered - cc[i].Admitted
	}
}

// pointArrays appends the points columns of rows [lo, lo+n) to cols.
func (c *costColumns) pointArrays(cols []arrow.Array, lo, n int) []arrow.Array {
	if !c.on {
		return cols
	}
	for k := range c.points {
		cols = append(cols, window(arrow.PrimitiveTypes.Int64, int64Bytes(c.points[k]), nil, 0, lo, n))
	}
	return cols
}

// clientArrays appends the clients columns of client rows [lo, lo+n).
func (c *costColumns) clientArrays(cols []arrow.Array, lo, n int) []arrow.Array {
	if !c.on {
		return cols
	}
	for k := range c.clients {
		cols = append(cols, window(arrow.PrimitiveTypes.Int64, int64Bytes(c.clients[k]), nil, 0, lo, n))
	}
	return cols
}

// costingSim is a pointSim that gives the cost units its last run offered
// and admitted per clients row.
type costingSim interface {
	// clientCosts fills dst (one per clients row) from the last run, whose
	// clients rows are clients.
	clientCosts(clients []model.ClientResult, dst []model.ClientResult)
}

func (s *scenarioSim) clientCosts(clients []model.ClientResult, dst []model.ClientResult) {
	for i := range clients {
		c := s.wl.Scenario.Clients[i].RequestCost()
		dst[i] = model.ClientResult{Offered: clients[i].Offered * c, Admitted: clients[i].Admitted * c}
	}
}

func (s *trafficSim) clientCosts(_ []model.ClientResult, dst []model.ClientResult) {
	clear(dst)
	for i := range s.replay.Keys {
		k := &s.replay.Keys[i]
		o := &dst[s.grouping.Of[i]]
		for l := range k.OfferedCost {
			o.Offered += k.OfferedCost[l]
			o.Admitted += k.AdmittedCost[l]
		}
	}
}

// setCosts stores the cost totals of row, simulated by sim into clients.
func (r *partResult) setCosts(row int, m *model.Metrics, clients []model.ClientResult, sim pointSim) {
	if !r.cost.on {
		return
	}
	cs, ok := sim.(costingSim)
	if !ok {
		panic("sweep: a run with costs on a source without them")
	}
	r.cost.scratch = grow(r.cost.scratch, len(clients))
	cs.clientCosts(clients, r.cost.scratch)
	r.cost.set(row, m, r.cost.scratch)
}

// readCosts fills rows' cost totals from points file f when it has the
// cost columns (rows: the file's rows, in file order).
func readCosts(ctx context.Context, f string, rows []PointRow) error {
	if !HasCosts(f) {
		return nil
	}
	i := 0
	return ScanFile(ctx, f, CostColumns(), func(rec arrow.RecordBatch) error {
		c := rec.Columns()
		for j := range int(rec.NumRows()) {
			if i >= len(rows) {
				return inputErrorf("%s: more cost rows than points rows", f)
			}
			m := &rows[i].Metrics
			m.Cost.Measured = true
			for k, im := range costMetrics {
				v, ok := Int(c[k], j)
				if err := checkRangeOK(f, rows[i].PointID, im.name, float64(v), ok); err != nil {
					return err
				}
				*im.field(m) = v
			}
			i++
		}
		return nil
	})
}

// HasCosts reports whether points file f has the cost columns (its
// requests carry costs).
func HasCosts(f string) bool {
	schema, err := fileSchema(f)
	return err == nil && len(schema.FieldIndices(costMetrics[0].name)) == 1
}

// addKeyShardCosts adds key shard in's cost totals of part p to ms (per
// points row) and cc (per points row × merged clients row), when cc is
// not nil (the requests carry costs). The rows were checked by
// addKeyShardPart.
func addKeyShardCosts(ctx context.Context, in *keyShardIn, p Part, ms []model.Metrics, cc []model.ClientResult, nc int) error {
	if cc == nil {
		return nil
	}
	path := filepath.Join(in.dir, "points", p.Name())
	row := 0
	err := ScanFile(ctx, path, CostColumns(), func(rec arrow.RecordBatch) error {
		for i := range int(rec.NumRows()) {
			if row >= len(ms) {
				return fmt.Errorf("%s: more than %d rows", path, len(ms))
			}
			for k, im := range costMetrics {
				v, _ := Int(rec.Column(k), i)
				*im.field(&ms[row]) += v
			}
			row++
		}
		return nil
	})
	if err != nil {
		return err
	}
	path = filepath.Join(in.dir, "clients", p.Name())
	nr := len(in.rowOf)
	k := 0
	return ScanFile(ctx, path, costClientColumns, func(rec arrow.RecordBatch) error {
		for i := range int(rec.NumRows()) {
			row := k / nr
			if row*nc >= len(cc) {
				return fmt.Errorf("%s: more than %d rows", path, len(cc)/nc*nr)
			}
			c := &cc[row*nc+int(in.rowOf[k%nr])]
			off, _ := Int(rec.Column(0), i)
			cut, _ := Int(rec.Column(1), i)
			c.Offered += off
			c.Admitted += off - cut
			k++
		}
		return nil
	})
}
