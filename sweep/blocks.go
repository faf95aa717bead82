package sweep

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ratesweep/ratesweep/model"
)

// The penalty box's columns (docs/penalty-box.md): legit_blocked_s and
// blocks in points, blocked_s in clients. Every policy has them, 0 without
// block_s; runs written before they existed read them as null (0). Log
// replays fill them per key (a key is a client), key shards add them up.

// legitBlockedMetric is the points column of the legitimate clients'
// blocked seconds.
const legitBlockedMetric = "legit_blocked_s"

// BlockedColumn is the clients column of the time a penalty box kept the
// client's keys blocked, seconds.
const BlockedColumn = "blocked_s"

// addedColumnType returns the type of a column added after files were
// written (a parameter, or a penalty-box column), which reads as null from
// older files.
func addedColumnType(name string) (arrow.DataType, bool) {
	if prm, ok := model.LookupParam(name); ok {
		return paramType(prm), true
	}
	if name == BlockedColumn {
		return arrow.PrimitiveTypes.Float64, true
	}
	for _, m := range blockTimeMetrics {
		if m.name == name {
			return arrow.PrimitiveTypes.Float64, true
		}
	}
	for _, m := range blockCountMetrics {
		if m.name == name {
			return arrow.PrimitiveTypes.Int64, true
		}
	}
	return nil, false
}

// setBlocked stores the blocked time of the clients of the row whose first
// client row is k. The column is kept empty (all 0) until a row has a
// block.
func (r *partResult) setBlocked(k int, clients []model.ClientResult) {
	if len(r.blocked) == 0 {
		any := false
		for _, c := range clients {
			any = any || c.BlockedNs != 0
		}
		if !any {
			return
		}
		r.blocked = grow(r.blocked, len(r.offered))
		clear(r.blocked)
	}
	for i, c := range clients {
		r.blocked[k+i] = c.BlockedNs
	}
}

// blockedArray is the blocked_s column of clients rows [lo, lo+n).
func (r *partResult) blockedArray(lo, n int) arrow.Array {
	s := r.scratch.float64s(n)
	if len(r.blocked) == 0 {
		clear(s)
	} else {
		for i, ns := range r.blocked[lo : lo+n] {
			s[i] = float64(ns) / 1e9
		}
	}
	return primitive(arrow.PrimitiveTypes.Float64, s, nil, 0)
}
