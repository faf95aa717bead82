package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/internal/yamlx"
)

// decodeClientKeys reads a client's optional addresses, accounts,
// address_pool, account_pool and spread.
func decodeClientKeys(m *yamlx.Map) (ClientKeys, error) {
	var k ClientKeys
	count := func(key string, dst *int) error {
		n := m.Get(key)
		if n == nil {
			return nil
		}
		v, err := yamlx.Int(n, m.FieldPath(key))
		if err != nil {
			return err
		}
		if v < 1 || v > MaxKeys {
			return yamlx.Errorf(n, m.FieldPath(key), "must be a whole number between 1 and %d, got %d", MaxKeys, v)
		}
		*dst = int(v)
		return nil
	}
	if err := count("addresses", &k.Addresses); err != nil {
		return k, err
	}
	if err := count("accounts", &k.Accounts); err != nil {
		return k, err
	}
	var err error
	if k.AddressPool, err = m.OptString("address_pool"); err != nil {
		return k, err
	}
	if k.AccountPool, err = m.OptString("account_pool"); err != nil {
		return k, err
	}
	if k.Org, err = m.OptString("org"); err != nil {
		return k, err
	}
	if n := m.Get("spread"); n != nil {
		s, err := yamlx.Str(n, m.FieldPath("spread"))
		if err != nil {
			return k, err
		}
		i := slices.Index(spreadNames, s)
		if i < 0 {
			return k, yamlx.Errorf(n, m.FieldPath("spread"), "must be round_robin or random, got %q", s)
		}
		k.Spread = Spread(i)
	}
	return k, nil
}

// writeYAML appends the non-default key fields in canonical form (nothing
// for the lesson's clients, so their scenario hashes stay).
func (k ClientKeys) writeYAML(b *strings.Builder) {
	if k.Addresses > 1 {
		fmt.Fprintf(b, "    addresses: %d\n", k.Addresses)
	}
	if k.Accounts > 1 {
		fmt.Fprintf(b, "    accounts: %d\n", k.Accounts)
	}
	if k.AddressPool != "" {
		fmt.Fprintf(b, "    address_pool: %s\n", quote(k.AddressPool))
	}
	if k.AccountPool != "" {
		fmt.Fprintf(b, "    account_pool: %s\n", quote(k.AccountPool))
	}
	if k.Spread != SpreadRoundRobin {
		fmt.Fprintf(b, "    spread: %s\n", k.Spread)
	}
	if k.Org != "" {
		fmt.Fprintf(b, "    org: %s\n", quote(k.Org))
	}
}
