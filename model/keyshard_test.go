package model

import (
	"slices"
	"testing"
)

// Clients that share an address pool, an account pool or an organisation,
// directly or through one another, take the first one's name; the others
// their own.
func TestShardKeys(t *testing.T) {
	c := func(name, addrPool, acctPool, org string) Client {
		return Client{Name: name, Keys: ClientKeys{AddressPool: addrPool, AccountPool: acctPool, Org: org}}
	}
	sc := &Scenario{Clients: []Client{
		c("a", "", "", ""),
		c("b", "office", "", ""),
		c("c", "", "users", ""),
		c("d", "office", "", "acme"),
		c("e", "", "users", "acme"),
		c("f", "", "", "solo"),
		c("g", "home", "", ""),
	}}
	want := []string{"a", "b", "b", "b", "b", "f", "g"}
	if got := sc.ShardKeys(); !slices.Equal(got, want) {
		t.Errorf("ShardKeys = %q, want %q", got, want)
	}
}

// A kept client draws the requests it draws in the whole scenario.
func TestKeepClientsKeepsStreams(t *testing.T) {
	sc := &Scenario{Name: "s", DurationS: 60, Arrivals: Arrivals{Process: Poisson}}
	for _, n := range []string{"a", "b", "c", "d"} {
		sc.Clients = append(sc.Clients, Client{Name: n, Segments: []Segment{{0, 60, 3}}})
	}
	whole, err := NewWorkload(sc)
	if err != nil {
		t.Fatal(err)
	}
	part, err := NewWorkload(sc.KeepClients([]bool{false, true, false, true}))
	if err != nil {
		t.Fatal(err)
	}
	w, p := whole.Realise(5, 2, nil), part.Realise(5, 2, nil)
	if !slices.Equal(w[1], p[0]) || !slices.Equal(w[3], p[1]) || slices.Equal(w[1], w[3]) {
		t.Errorf("kept clients draw other requests than in the whole scenario")
	}
	if _, err := NewWorkload(sc.KeepClients(make([]bool, 4))); err != nil {
		t.Errorf("a shard without clients: %v", err)
	}
}
