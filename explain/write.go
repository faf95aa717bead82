package explain

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/ratesweep/ratesweep/model"
)

// Row is one row of the explain table: requests of one client that one
// policy cut (legitimate) or admitted (abusive, missed), for one cause.
type Row struct {
	Policy   string // canonical label
	Client   string
	Class    string // legit or abusive
	Requests int64  // cut (legit) or missed (abusive)
	Cause    string
}

// Rows lists res's rows: per client with requests cut or missed, one row
// per cause with any, in scenario order then cause order.
func Rows(res *Result) []Row {
	var out []Row
	for _, c := range res.Clients {
		for k, n := range c.ByCause {
			if n > 0 {
				out = append(out, Row{res.Label, c.Name, c.Class.String(), n, Cause(k).String()})
			}
		}
	}
	return out
}

// Schema is the explain table's Arrow schema.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "policy", Type: arrow.BinaryTypes.String},
	{Name: "client", Type: arrow.BinaryTypes.String},
	{Name: "class", Type: arrow.BinaryTypes.String},
	{Name: "requests", Type: arrow.PrimitiveTypes.Int64},
	{Name: "cause", Type: arrow.BinaryTypes.String},
}, nil)

// WriteParquet writes rows as one Parquet file (zstd) to w.
func WriteParquet(w io.Writer, rows []Row) error {
	b := array.NewRecordBuilder(memory.DefaultAllocator, Schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.Policy)
		b.Field(1).(*array.StringBuilder).Append(r.Client)
		b.Field(2).(*array.StringBuilder).Append(r.Class)
		b.Field(3).(*array.Int64Builder).Append(r.Requests)
		b.Field(4).(*array.StringBuilder).Append(r.Cause)
	}
	rec := b.NewRecord()
	defer rec.Release()
	fw, err := pqarrow.NewFileWriter(Schema, w, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	if err := fw.Write(rec); err != nil {
		fw.Close()
		return err
	}
	return fw.Close()
}

// Diff is who is affected under A and not under B: legitimate clients A
// cuts and B does not, abusive clients A lets through and B does not.
type Diff struct {
	A, B    *Result
	Clients []Client // A's explanation of them
}

// Compare returns the clients affected under a and not under b (a and b
// explain the same scenario).
func Compare(a, b *Result) Diff {
	d := Diff{A: a, B: b}
	for i, c := range a.Clients {
		if c.Affected > 0 && b.Clients[i].Affected == 0 {
			d.Clients = append(d.Clients, c)
		}
	}
	return d
}

// WriteMarkdown writes a summary of res (and, with vs, of who is affected
// under one and not the other) to w, under the heading title (and notes
// as a paragraph when not empty). Names are escaped for Markdown.
func WriteMarkdown(w io.Writer, title, notes string, res, vs *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", cell(title))
	if notes != "" {
		fmt.Fprintf(&b, "%s\n\n", cell(notes))
	}
	for _, r := range []*Result{res, vs} {
		if r == nil {
			continue
		}
		summary(&b, r)
	}
	if vs != nil {
		for _, d := range []Diff{Compare(res, vs), Compare(vs, res)} {
			fmt.Fprintf(&b, "## Under `%s`, not under `%s`\n\n", d.A.Label, d.B.Label)
			if len(d.Clients) == 0 {
				b.WriteString("No client.\n\n")
				continue
			}
			clientTable(&b, d.Clients)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func summary(b *strings.Builder, r *Result) {
	fmt.Fprintf(b, "## `%s`\n\n", r.Label)
	fmt.Fprintf(b, "Counterfactuals: window shape `%s`", r.Shape.Canonical())
	if r.HasBurst {
		fmt.Fprintf(b, "; burst `%s` (legitimate), `%s` (abusive)", r.Burst.Canonical(), r.Tight.Canonical())
	} else {
		b.WriteString("; burst: none (a window's limit is its burst)")
	}
	b.WriteString(".\n\n")
	var tot [2][NumCauses]int64
	var n [2]int
	var affected []Client
	for _, c := range r.Clients {
		if c.Affected == 0 {
			continue
		}
		affected = append(affected, c)
		n[c.Class]++
		for k, v := range c.ByCause {
			tot[c.Class][k] += v
		}
	}
	b.WriteString("| | clients | " + strings.Join(causeNames[:], " | ") + " |\n|---|---:|---:|---:|---:|---:|\n")
	for cl, what := range []string{"legitimate requests cut", "abusive requests missed"} {
		fmt.Fprintf(b, "| %s | %d |", what, n[cl])
		for _, v := range tot[cl] {
			fmt.Fprintf(b, " %d |", v)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	if len(affected) > 0 {
		clientTable(b, affected)
	}
}

// MaxClients is how many clients a summary table lists; explain.parquet
// has them all.
const MaxClients = 25

// clientTable lists clients, legitimate first, most affected first, at
// most MaxClients.
func clientTable(b *strings.Builder, cs []Client) {
	cs = slices.Clone(cs)
	slices.SortStableFunc(cs, func(x, y Client) int {
		if x.Class != y.Class {
			return int(x.Class) - int(y.Class)
		}
		return int(min(max(y.Affected-x.Affected, -1), 1))
	})
	more := len(cs) - MaxClients
	if more > 0 {
		cs = cs[:MaxClients]
	}
	defer func() {
		if more > 0 {
			fmt.Fprintf(b, "And %d more clients (explain.parquet lists them all).\n\n", more)
		}
	}()
	b.WriteString("| client | class | offered | cut or missed | " + strings.Join(causeNames[:], " | ") + " |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cs {
		what := "cut"
		if c.Class == model.Abusive {
			what = "missed"
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d %s |", cell(c.Name), c.Class, c.Offered, c.Affected, what)
		for _, v := range c.ByCause {
			fmt.Fprintf(b, " %d |", v)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// cell escapes a name for a Markdown table cell: pipes, backslashes,
// backticks and control characters.
func cell(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '|' || r == '\\' || r == '`' || r == '*' || r == '_' || r == '<' || r == '>' || r == '[' || r == ']':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x200e && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
