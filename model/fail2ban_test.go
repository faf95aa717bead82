package model_test

import (
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// TestFail2banTraces checks fail2ban's counting on traces worked by hand
// (fail2ban 1.0.2's FailTicket.adjustTime and FailManager): each request is
// (time in ms, status), 0 for a request that counts as a failure; want is
// the decisions and blocks the ban starts, ms.
func TestFail2banTraces(t *testing.T) {
	type req struct {
		ms     int64
		status int
	}
	fails := func(ms ...int64) []req {
		rs := make([]req, len(ms))
		for i, m := range ms {
			rs[i] = req{m, 0}
		}
		return rs
	}
	for _, tc := range []struct {
		name, policy string
		reqs         []req
		want         string // A admitted, R rejected
		blocks       []int64
	}{
		{
			// The 3rd failure is served and bans [2 s, 22 s); the address
			// comes back at 22 s with a new ticket and is banned again at
			// its 3rd failure.
			name: "comes back after a ban", policy: "fail2ban window_s=10 limit=3 mitigation_timeout_s=20",
			reqs: fails(0, 1000, 2000, 3000, 21999, 22000, 23000, 24000, 25000),
			want: "AAARRAAAR", blocks: []int64{2000, 24000},
		},
		{
			// At 12 s the ticket (first 0, last 8 s, retry 2) is rescaled:
			// round(2·10/12) = 2, first = 2 s; +1 = 3 bans, where a sliding
			// window of 10 s holds 2.
			name: "rescale bans early", policy: "fail2ban window_s=10 limit=3 mitigation_timeout_s=20",
			reqs: fails(0, 8000, 12000, 13000),
			want: "AAAR", blocks: []int64{12000},
		},
		{
			// At 12 s: round(3·10/12) = round(2.5) = 2 (half to even), +1
			// = 3; a second failure at 12 s is not rescaled (not later than
			// the last) and makes 4.
			name: "rescale ties to even", policy: "fail2ban window_s=10 limit=4 mitigation_timeout_s=20",
			reqs: fails(0, 1000, 3000, 12000, 12000, 13000),
			want: "AAAAAR", blocks: []int64{12000},
		},
		{
			// At 10.1 s: round(3·10/10.1) = 3, +1 = 4, first 0.1 s; at
			// 10.2 s: round(4·10/10.1) = 4, +1 = 5 bans.
			name: "rescale twice", policy: "fail2ban window_s=10 limit=5 mitigation_timeout_s=20",
			reqs: fails(0, 100, 200, 10100, 10200, 10300),
			want: "AAAAAR", blocks: []int64{10200},
		},
		{
			// At 11 s the last failure (1 s) is findtime old: the ticket is
			// forgotten (rescaled it would make round(2·10/11)+1 = 3 and
			// ban), and the ban comes at 13 s.
			name: "forgotten after findtime", policy: "fail2ban window_s=10 limit=3 mitigation_timeout_s=20",
			reqs: fails(0, 1000, 11000, 12000, 13000),
			want: "AAAAA", blocks: []int64{13000},
		},
		{
			// Only 401s count; a success is rejected only during the ban.
			name: "count_if", policy: "fail2ban window_s=10 limit=3 mitigation_timeout_s=20 count_if=401",
			reqs: []req{{0, 401}, {1000, 200}, {2000, 401}, {3000, 200}, {4000, 401}, {5000, 200}, {23999, 401}, {24000, 200}, {25000, 401}, {26000, 401}},
			want: "AAAAARRAAA", blocks: []int64{4000},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := model.ParseLabel(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			d, err := model.NewDecider(p)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			for _, r := range tc.reqs {
				var ok bool
				if rd, weighed := d.(model.RequestDecider); weighed {
					ok = rd.AllowRequest(r.ms*1e6, 1, r.status)
				} else {
					ok = d.Allow(r.ms * 1e6)
				}
				got = append(got, "RA"[b2i(ok)])
			}
			if string(got) != tc.want {
				t.Errorf("decisions %s, want %s", got, tc.want)
			}
			blocks, blockedNs, ok := model.BlockStats(d, 1e15)
			wantNs := int64(len(tc.blocks)) * int64(p.MitigationTimeoutS) * 1e9
			if !ok || blocks != int64(len(tc.blocks)) || blockedNs != wantNs {
				t.Errorf("blocks %d (%d ns, %v), want %d (%d ns)", blocks, blockedNs, ok, len(tc.blocks), wantNs)
			}
		})
	}
}

// TestFail2banAllowN: n failures at once are n calls of Allow.
func TestFail2banAllowN(t *testing.T) {
	p, _ := model.ParseLabel("fail2ban window_s=10 limit=3 mitigation_timeout_s=20")
	d, _ := model.NewDecider(p)
	if k := d.AllowN(0, 5); k != 3 {
		t.Errorf("AllowN(0, 5) = %d, want 3", k)
	}
	if k := d.AllowN(20e9, 2); k != 2 {
		t.Errorf("AllowN(20 s, 2) = %d after the ban, want 2", k)
	}
	for _, name := range []string{"limit", "window_s", "mitigation_timeout_s"} {
		q := p
		q.Set(name, 0)
		if err := q.Validate(); err == nil {
			t.Errorf("%s=0: accepted", name)
		}
	}
}
