package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// Decider is one key's request-by-request limiter: the seam to the event
// simulation (model.Decider of the zoo branch has these methods). Times are
// ns since StartUnix and do not decrease between Resets.
type Decider interface {
	Reset()
	Allow(tNs int64) bool
}

// KeyResult is what a policy did to one key's requests, by request label
// (indexed by model.Stage; NoStage = legit).
type KeyResult struct {
	Offered  [4]int64
	Admitted [4]int64
}

// Totals is the key's requests offered and admitted, all labels together.
func (r *KeyResult) Totals() model.ClientResult {
	var c model.ClientResult
	for s := range r.Offered {
		c.Offered += r.Offered[s]
		c.Admitted += r.Admitted[s]
	}
	return c
}

// Replay is the outcome of one policy over one realisation of a log.
type Replay struct {
	Keys          []KeyResult // t.Keys order
	model.Metrics             // judged per request label, so mixed keys count exactly
}

// Replay offers every key's requests (times from Realise, t.Keys order) to
// a fresh state of d, request by request, and fills out, reusing its
// storage. Metrics are counted per request label: a legitimate request cut
// is a false cut even when its key is mostly abusive.
func (t *Traffic) Replay(times [][]int64, d Decider, out *Replay) {
	if cap(out.Keys) < len(t.Keys) {
		out.Keys = make([]KeyResult, len(t.Keys))
	}
	out.Keys = out.Keys[:len(t.Keys)]
	for i, ts := range times[:len(t.Keys)] {
		labels := t.Labels(i)
		r := &out.Keys[i]
		*r = KeyResult{}
		d.Reset()
		for j, tn := range ts {
			l := labels[j]
			r.Offered[l]++
			if d.Allow(tn) {
				r.Admitted[l]++
			}
		}
	}
	out.Metrics = MetricsByLabel(out.Keys)
}

// MetricsByLabel derives the judged numbers from per-key results by label.
func MetricsByLabel(keys []KeyResult) model.Metrics {
	var m model.Metrics
	for i := range keys {
		r := &keys[i]
		m.Count(model.Legit, model.NoStage, model.ClientResult{Offered: r.Offered[model.NoStage], Admitted: r.Admitted[model.NoStage]})
		for _, s := range model.Stages {
			m.Count(model.Abusive, s, model.ClientResult{Offered: r.Offered[s], Admitted: r.Admitted[s]})
		}
	}
	m.Finish()
	return m
}

// FileSHA256 is the hex SHA-256 of a file's bytes as stored (compressed or
// not): the identity of a log for run metadata.
func FileSHA256(path string) (string, error) {
	f, err := Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", &yamlx.Error{File: path, Msg: err.Error()}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Totals returns every key's offered and admitted requests, all labels
// together (t.Keys order), for Rows.Aggregate; it reuses buf's storage.
func (r *Replay) Totals(buf []model.ClientResult) []model.ClientResult {
	if cap(buf) < len(r.Keys) {
		buf = make([]model.ClientResult, len(r.Keys))
	}
	buf = buf[:len(r.Keys)]
	for i := range r.Keys {
		buf[i] = r.Keys[i].Totals()
	}
	return buf
}
