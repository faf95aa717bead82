package ingest

// Interning a log's keys: the key table, its short forms and the keys' lists.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// checkKey refuses a request whose key field is missing, empty or "-" (a
// shared key "-" would make one busy client of every such line) or holds a
// NUL byte.
func (b *builder) checkKey(rec *Record) error {
	for _, f := range b.opt.Key {
		if f == FieldStatus {
			if rec.Status == 0 {
				return errors.New("no status to key by (logged as -)")
			}
			continue
		}
		v := fieldBytes(rec, f)
		if len(v) == 0 || len(v) == 1 && v[0] == '-' {
			return fmt.Errorf("no %s to key by (missing, empty or -)", f)
		}
		if hasNUL(v) {
			return fmt.Errorf("the %s to key by holds a NUL byte", f)
		}
	}
	return nil
}

// hasNUL reports whether v holds a 0 byte; a key of 8 to 16 bytes (an
// IPv4 address) is read in two words.
func hasNUL(v []byte) bool {
	if n := len(v); n >= 8 && n <= 16 {
		const ones, highs = 0x0101010101010101, 0x8080808080808080
		a, b := binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[n-8:])
		return ((a-ones)&^a|(b-ones)&^b)&highs != 0
	}
	return bytes.IndexByte(v, 0) >= 0
}

// key interns the record's key and returns its index.
func (b *builder) key(rec *Record) int32 {
	if len(b.opt.Key) == 1 {
		// One field: its bytes as they are (a copy only where
		// appendField changes them).
		switch f := b.opt.Key[0]; f {
		case FieldPathPrefix, FieldStatus:
		default:
			if v := fieldBytes(rec, f); len(v) > 0 {
				return b.intern(v)
			}
		}
	}
	buf := b.keyBytes(b.scratch[:0], rec)
	b.scratch = buf
	return b.intern(buf)
}

// intern returns the index of the key with bytes buf, interning it first.
func (b *builder) intern(buf []byte) int32 {
	sk := shortKeyOf(buf)
	// A client's requests come in runs (a page and its assets): the
	// previous line's key first.
	if b.lastKey != 0 && sk == b.lastShort && (sk.n <= 16 || b.raw[b.lastKey-1] == string(buf)) {
		return b.lastKey - 1
	}
	k, ok := b.index.find(sk, buf, b.raw)
	if !ok {
		k = b.newKey(string(buf))
		b.index.insert(sk, k)
	}
	b.lastShort, b.lastKey = sk, k+1
	return k
}

// internSeed seeds the key index's hashes (any seed: it only places keys;
// a random one keeps a hostile log from piling its keys in one place).
var internSeed = maphash.MakeSeed()

// shortKey is a key's bytes as the key index compares them: a key of at
// most 16 bytes (an IPv4 address) wholly, in a and b with its length n, so
// that finding it needs no other memory; a longer key by a hash of its
// bytes in a (n > 16), compared then with its bytes.
type shortKey struct {
	a, b uint64
	n    uint32
}

// shortKeyOf returns buf's shortKey.
func shortKeyOf(buf []byte) shortKey {
	n := len(buf)
	switch {
	case n > 16:
		return shortKey{a: maphash.Bytes(internSeed, buf), n: uint32(min(n, 1<<31))}
	case n >= 8: // the first and the last 8 bytes, overlapping
		return shortKey{binary.LittleEndian.Uint64(buf), binary.LittleEndian.Uint64(buf[n-8:]), uint32(n)}
	case n >= 4:
		return shortKey{uint64(binary.LittleEndian.Uint32(buf)) | uint64(binary.LittleEndian.Uint32(buf[n-4:]))<<32, 0, uint32(n)}
	case n > 0:
		return shortKey{uint64(buf[0]) | uint64(buf[n/2])<<8 | uint64(buf[n-1])<<16, 0, uint32(n)}
	}
	return shortKey{}
}

// slot is the key index's slot of a shortKey.
func (sk shortKey) slot(mask uint64) uint64 {
	if sk.n > 16 {
		return sk.a & mask
	}
	hi, lo := bits.Mul64(sk.a^seedA, sk.b^seedB^uint64(sk.n))
	return (hi ^ lo) & mask
}

// seedA and seedB key the short keys' hash (from internSeed).
var seedA, seedB = maphash.String(internSeed, "a"), maphash.String(internSeed, "b")

// keyIndex finds a key's index by its bytes: an open-addressing hash table
// (linear probing, at most half full) of key indices, 4 bytes a slot, with
// each key's shortKey beside it in key order, so that the table and the
// busy keys stay in the cache. A short key is found by its shortKey alone;
// a long one by its hash, then its bytes in the builder's raw names.
type keyIndex struct {
	slots []int32    // 1 + key index; 0: empty. len a power of two
	short []shortKey // by key index
}

// find returns the index of the key sk of bytes buf.
func (x *keyIndex) find(sk shortKey, buf []byte, raw []string) (int32, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(x.slots) - 1)
	for i := sk.slot(mask); ; i = (i + 1) & mask {
		k := x.slots[i] - 1
		if k < 0 {
			return 0, false
		}
		if x.short[k] == sk && (sk.n <= 16 || raw[k] == string(buf)) {
			return k, true
		}
	}
}

// insert adds key index k (the next: len(x.short)) of shortKey sk, not
// yet in the table.
func (x *keyIndex) insert(sk shortKey, k int32) {
	x.short = append(x.short, sk)
	if 2*len(x.short) > len(x.slots) {
		x.slots = make([]int32, max(1024, 2*len(x.slots)))
		for j := range x.short {
			x.place(int32(j))
		}
		return
	}
	x.place(k)
}

// place puts key index k in the table.
func (x *keyIndex) place(k int32) {
	mask := uint64(len(x.slots) - 1)
	i := x.short[k].slot(mask)
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = k + 1
}

// newKey adds a key name to the key table and returns its index.
func (b *builder) newKey(name string) int32 {
	k := int32(len(b.names))
	b.raw = append(b.raw, name)
	name = keyName(name)
	b.names = append(b.names, name)
	b.keyBits = append(b.keyBits, b.listedBits(name))
	b.keyPrec = append(b.keyPrec, 0)
	return k
}

// keyName is a key's name: its bytes, invalid UTF-8 replaced.
func keyName(raw string) string {
	if !utf8.ValidString(raw) {
		return strings.ToValidUTF8(raw, "\uFFFD")
	}
	return raw
}

// keyLists reports whether a rule lists keys.
func (b *builder) keyLists() bool {
	for i := range b.opt.Rules {
		if b.opt.Rules[i].Keys != nil {
			return true
		}
	}
	return false
}

// listedBits are the rules 0..31 whose keys list names the key name.
func (b *builder) listedBits(name string) uint32 {
	var bits uint32
	for i := range b.opt.Rules {
		if r := &b.opt.Rules[i]; r.Keys != nil && i < 32 && r.Keys[name] {
			bits |= 1 << i
		}
	}
	return bits
}
