package model

import (
	"fmt"
	"strings"
)

// Key says what a policy's limit hangs on (docs/keys.md).
type Key uint8

const (
	// KeyClient is the lesson's key: one limiter per client.
	KeyClient Key = iota
	// KeyAddress is one limiter per source address.
	KeyAddress
	// KeyAccount is one limiter per target account.
	KeyAccount
	// KeyBoth is two limiters, one per address and one per account, with the
	// same parameters: a request must pass both. A limiter is charged only if
	// every limiter passes the request (nginx's rule for several limit_req
	// zones); a limiter that itself rejects applies its own rule for rejected
	// requests (sliding_log and fixed_window_anchored count them).
	KeyBoth
	// KeyGlobal is one limiter for all traffic.
	KeyGlobal
	// KeyOrg is one limiter per organisation: clients naming the same org
	// share it; a client without one is an organisation of its own.
	KeyOrg
)

var keyNames = []string{"client", "address", "account", "both", "global", "org"}

func (k Key) String() string {
	if int(k) < len(keyNames) {
		return keyNames[k]
	}
	return fmt.Sprintf("Key(%d)", uint8(k))
}

// LB is how a load balancer spreads requests over nodes.
type LB uint8

const (
	// RoundRobin sends request j of the merged request stream to node j mod N.
	RoundRobin LB = iota
	// RandomLB sends each request to a node drawn uniformly (seeded by the
	// sweep's seed and the replicate).
	RandomLB
)

var lbNames = []string{"round_robin", "random"}

func (l LB) String() string {
	if int(l) < len(lbNames) {
		return lbNames[l]
	}
	return fmt.Sprintf("LB(%d)", uint8(l))
}

// State says where the nodes keep their limiter state.
type State uint8

const (
	// Local state: each node has its own limiters, so N nodes admit up to N
	// times the limit.
	Local State = iota
	// Shared state: one store (Redis) for all nodes; sync_ms is its lag.
	Shared
)

var stateNames = []string{"local", "shared"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Spread says how a client's requests pick their address and account.
type Spread uint8

const (
	// SpreadRoundRobin gives the client's request j (in time order) address
	// j mod addresses and account j mod accounts.
	SpreadRoundRobin Spread = iota
	// SpreadRandom draws address and account uniformly and independently for
	// each request (seeded by the sweep's seed, the replicate and the client).
	SpreadRandom
)

var spreadNames = []string{"round_robin", "random"}

func (s Spread) String() string {
	if int(s) < len(spreadNames) {
		return spreadNames[s]
	}
	return fmt.Sprintf("Spread(%d)", uint8(s))
}

// ClientKeys says which addresses a client sends from and which accounts it
// targets. The zero value is the lesson's: one address and one account of
// the client's own.
type ClientKeys struct {
	Addresses int // source addresses, >= 1 (0 means 1)
	Accounts  int // target accounts, >= 1 (0 means 1)
	// AddressPool and AccountPool name shared key spaces: clients naming the
	// same pool share its addresses (accounts) 0 … n-1, e.g. a NATed office
	// and an attacker behind the same address, or an attacker targeting the
	// legitimate users' accounts. Empty means keys of the client's own.
	AddressPool, AccountPool string
	Spread                   Spread
	// Org names the client's organisation: clients naming the same org
	// share the key org (an integrator's tenant, a company's users). Empty
	// means an organisation of the client's own.
	Org string
}

// MaxKeys bounds a client's addresses or accounts.
const MaxKeys = 10_000_000

// addresses and accounts are the effective counts (at least 1).
func (k ClientKeys) addresses() int { return max(k.Addresses, 1) }
func (k ClientKeys) accounts() int  { return max(k.Accounts, 1) }

// isDefault reports whether the keys are the lesson's (one of each, own).
func (k ClientKeys) isDefault() bool {
	return k.addresses() == 1 && k.accounts() == 1 && k.AddressPool == "" && k.AccountPool == "" && k.Spread == SpreadRoundRobin
}

// validate checks a client's keys (path is the client's, e.g. "clients[2]").
func (k ClientKeys) validate(path string) error {
	switch {
	case k.Addresses < 0 || k.Addresses > MaxKeys:
		return fieldErr(path+".addresses", "must be between 1 and %d, got %d", MaxKeys, k.Addresses)
	case k.Accounts < 0 || k.Accounts > MaxKeys:
		return fieldErr(path+".accounts", "must be between 1 and %d, got %d", MaxKeys, k.Accounts)
	case k.Spread > SpreadRandom:
		return fieldErr(path+".spread", "must be round_robin or random")
	}
	return nil
}

// MaxKeyIDs bounds a scenario's distinct addresses, and its distinct
// accounts (own keys plus pools).
const MaxKeyIDs = 20_000_000

// MaxStateSlots bounds the limiter slots a policy needs on a workload
// (nodes × keys with local state): each costs about 24 bytes before use.
const MaxStateSlots = 20_000_000

// keyCounts returns the scenario's distinct addresses and accounts.
func (s *Scenario) keyCounts() (addrs, accts int64) {
	addrPools, acctPools := map[string]int64{}, map[string]int64{}
	for _, c := range s.Clients {
		if p := c.Keys.AddressPool; p != "" {
			addrPools[p] = max(addrPools[p], int64(c.Keys.addresses()))
		} else {
			addrs += int64(c.Keys.addresses())
		}
		if p := c.Keys.AccountPool; p != "" {
			acctPools[p] = max(acctPools[p], int64(c.Keys.accounts()))
		} else {
			accts += int64(c.Keys.accounts())
		}
	}
	for _, n := range addrPools {
		addrs += n
	}
	for _, n := range acctPools {
		accts += n
	}
	return addrs, accts
}

// validateKeyCounts checks the scenario's total keys.
func (s *Scenario) validateKeyCounts() error {
	a, c := s.keyCounts()
	if a > MaxKeyIDs || c > MaxKeyIDs {
		return fieldErr("clients", "%d addresses and %d accounts in all; at most %d of each", a, c, MaxKeyIDs)
	}
	return nil
}

// StateSlots is the number of limiters policy p may keep on the workload:
// keys (addresses + accounts for key both) times nodes with local state.
// Run sizes its tables by it; callers keep it within MaxStateSlots (the
// sweep refuses specs that do not).
func (w *Workload) StateSlots(p Policy) int64 {
	a, c := w.Scenario.keyCounts()
	var keys int64
	switch p.Key {
	case KeyAddress:
		keys = a
	case KeyAccount:
		keys = c
	case KeyBoth:
		keys = a + c
	case KeyGlobal:
		keys = 1
	case KeyOrg:
		keys = int64(w.Scenario.orgCount())
	default:
		keys = int64(len(w.Scenario.Clients))
	}
	if p.State == Local {
		keys *= int64(max(1, p.Nodes))
	}
	return keys
}

// Keyed reports whether any client has keys other than the lesson's.
func (s *Scenario) Keyed() bool {
	if s.keyed {
		return true
	}
	for i := range s.Clients {
		if !s.Clients[i].Keys.isDefault() {
			return true
		}
	}
	return false
}

// keysStochastic reports whether a client draws its keys at random.
func (s *Scenario) keysStochastic() bool {
	for i := range s.Clients {
		if s.Clients[i].Keys.Spread == SpreadRandom && (s.Clients[i].Keys.addresses() > 1 || s.Clients[i].Keys.accounts() > 1) {
			return true
		}
	}
	return false
}

// Distributed reports whether the policy runs on more than one node, on
// shared state, or with a key other than the client.
func (p Policy) Distributed() bool {
	return p.Key != KeyClient || p.Nodes > 1 || p.State != Local || p.SyncMs != 0 || p.LB != RoundRobin || p.Stack.keyed()
}

// maxNodes bounds nodes; maxSyncMs bounds sync_ms (one hour).
const (
	maxNodes  = 10_000
	maxSyncMs = 3_600_000
)

// validateDistribution checks the key and distributed-state parameters.
func (p Policy) validateDistribution() error {
	switch {
	case p.Key > KeyOrg:
		return fieldErr("key", "must be one of %s", strings.Join(keyNames, ", "))
	case p.Nodes < 0 || p.Nodes > maxNodes:
		return fieldErr("nodes", "must be between 1 and %d, got %d", maxNodes, p.Nodes)
	case p.LB > RandomLB:
		return fieldErr("lb", "must be round_robin or random")
	case p.State > Shared:
		return fieldErr("state", "must be local or shared")
	case !(p.SyncMs >= 0 && p.SyncMs <= maxSyncMs):
		return fieldErr("sync_ms", "must be between 0 and %d ms, got %v", maxSyncMs, p.SyncMs)
	case p.SyncMs != 0 && p.State != Shared:
		return fieldErr("sync_ms", "applies to state: shared only (local state has no store to sync), got %v ms", p.SyncMs)
	}
	return nil
}
