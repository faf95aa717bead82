package sweep

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/model"
)

// Metadata keys written into every Parquet file.
const (
	MetaVersion        = "ratesweep.version"
	MetaSpec           = "ratesweep.spec"
	MetaScenarioSHA256 = "ratesweep.scenario_sha256"
	MetaShard          = "ratesweep.shard"
	// MetaLog is a log replay's line accounting (JSON, as in the manifest's
	// "log" field); absent for scenarios.
	MetaLog = "ratesweep.log"
)

// intMetric and floatMetric are points columns derived from an outcome.
type intMetric struct {
	name  string
	field func(*model.Metrics) *int64
}

type floatMetric struct {
	name  string
	field func(*model.Metrics) *float64
}

// Points metric columns, in order after the parameter columns.
var (
	intMetrics = []intMetric{
		{"offered_legit", func(m *model.Metrics) *int64 { return &m.OfferedLegit }},
		{"offered_abusive", func(m *model.Metrics) *int64 { return &m.OfferedAbusive }},
		{"caught", func(m *model.Metrics) *int64 { return &m.Caught }},
		{"missed", func(m *model.Metrics) *int64 { return &m.Missed }},
		{"false_cut", func(m *model.Metrics) *int64 { return &m.FalseCut }},
	}
	pctMetrics = []floatMetric{
		{"legit_cut_pct", func(m *model.Metrics) *float64 { return &m.LegitCutPct }},
		{"missed_pct", func(m *model.Metrics) *float64 { return &m.MissedPct }},
	}
	stageMetrics = []intMetric{
		{"cut_design", func(m *model.Metrics) *int64 { return &m.CutDesign }},
		{"cut_code", func(m *model.Metrics) *int64 { return &m.CutCode }},
		{"cut_none", func(m *model.Metrics) *int64 { return &m.CutNone }},
	}
	tailMetrics = []floatMetric{
		{"only_here_pct", func(m *model.Metrics) *float64 { return &m.OnlyHerePct }},
		{"mean_delay_s", func(m *model.Metrics) *float64 { return &m.MeanDelayS }},
		{"p99_delay_s", func(m *model.Metrics) *float64 { return &m.P99DelayS }},
	}
	// accountMetrics count legitimate accounts (docs/keys.md).
	accountMetrics = []intMetric{
		{"legit_accounts", func(m *model.Metrics) *int64 { return &m.LegitAccounts }},
		{"legit_accounts_locked", func(m *model.Metrics) *int64 { return &m.LegitAccountsLocked }},
	}
	// blockTimeMetrics and blockCountMetrics are the penalty box's
	// (docs/penalty-box.md): 0 for a policy without block_s.
	blockTimeMetrics = []floatMetric{
		{legitBlockedMetric, func(m *model.Metrics) *float64 { return &m.LegitBlockedS }},
	}
	blockCountMetrics = []intMetric{
		{"blocks", func(m *model.Metrics) *int64 { return &m.Blocks }},
	}
	// stateMetrics are null where the simulation did not measure state
	// (the lesson's one-key-per-client path).
	stateMetrics = []intMetric{
		{"state_keys_peak", func(m *model.Metrics) *int64 { return &m.StateKeysPeak }},
		{"state_bytes_peak", func(m *model.Metrics) *int64 { return &m.StateBytesPeak }},
	}
)

var (
	dictInt8  = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	dictInt32 = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
)

// paramType is the Arrow type of a parameter column.
func paramType(p model.Param) arrow.DataType {
	if p.Values != nil {
		return dictInt8
	}
	if p.Int {
		return arrow.PrimitiveTypes.Int64
	}
	return arrow.PrimitiveTypes.Float64
}

// PointsSchema is the schema of points/*.parquet (metadata attached by the writer).
func pointsFields() []arrow.Field {
	f := []arrow.Field{
		{Name: "point_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "replicate", Type: arrow.PrimitiveTypes.Int32},
		{Name: "algorithm", Type: dictInt8},
	}
	for _, p := range model.Params {
		f = append(f, arrow.Field{Name: p.Name, Type: paramType(p), Nullable: true})
	}
	for _, m := range intMetrics {
		f = append(f, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Int64})
	}
	for _, m := range pctMetrics {
		f = append(f, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Float64})
	}
	for _, m := range stageMetrics {
		f = append(f, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Int64})
	}
	for _, m := range tailMetrics {
		f = append(f, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Float64})
	}
	for _, m := range accountMetrics {
		f = append(f, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Int64})
	}
	for _, m := range blockTimeMetrics {
		f = append(f, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Float64})
	}
	for _, m := range blockCountMetrics {
		f = append(f, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Int64})
	}
	for _, m := range stateMetrics {
		f = append(f, arrow.Field{Name: m.name, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	}
	return append(f, arrow.Field{Name: PolicyColumn, Type: arrow.BinaryTypes.String})
}

// NullableMetric reports whether ratesweep may write the points metric
// name as NULL ("not measured", such as state_keys_peak on the lesson's
// path); every other metric always holds a number.
func NullableMetric(name string) bool {
	for _, f := range pointsFields() {
		if f.Name == name {
			return f.Nullable
		}
	}
	return false
}

// PolicyColumn is the points column holding the canonical identity of the
// row's policy (model.Policy.Canonical, e.g. "sliding_window window_s=60
// limit=600"): the key that joins points across runs, since a join on the
// parameter columns fails on their NULLs.
const PolicyColumn = "policy"

// clientsFields is the schema of clients/*.parquet.
func clientsFields() []arrow.Field {
	return []arrow.Field{
		{Name: "point_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "replicate", Type: arrow.PrimitiveTypes.Int32},
		{Name: "client", Type: dictInt32},
		{Name: "class", Type: dictInt8},
		{Name: "stage", Type: dictInt8, Nullable: true},
		{Name: "offered", Type: arrow.PrimitiveTypes.Int64},
		{Name: "admitted", Type: arrow.PrimitiveTypes.Int64},
		{Name: "cut", Type: arrow.PrimitiveTypes.Int64},
		{Name: BlockedColumn, Type: arrow.PrimitiveTypes.Float64},
	}
}

// dictionaryColumns get Parquet dictionary encoding (low cardinality);
// deltaColumns get DELTA_BINARY_PACKED (integer metrics). The replicate
// column is plain: it holds one value in most runs, which zstd compresses
// to nothing, while a dictionary hashed every value (6% of bench-large's
// CPU, for the same file size).
func dictionaryColumns() []string {
	out := []string{"algorithm", "client", "class", "stage"}
	for _, p := range model.Params {
		out = append(out, p.Name)
	}
	return out
}

// noStatsColumns are the columns of Arrow dictionary type, which get no
// Parquet statistics (see writerProps).
func noStatsColumns() []string {
	var out []string
	for _, f := range append(pointsFields(), clientsFields()...) {
		if _, ok := f.Type.(*arrow.DictionaryType); ok && !slices.Contains(out, f.Name) {
			out = append(out, f.Name)
		}
	}
	return out
}

func deltaColumns() []string {
	out := []string{"point_id", "offered", "admitted", "cut"}
	for _, m := range intMetrics {
		out = append(out, m.name)
	}
	for _, m := range stageMetrics {
		out = append(out, m.name)
	}
	for _, m := range slices.Concat(accountMetrics, blockCountMetrics, stateMetrics) {
		out = append(out, m.name)
	}
	return out
}
