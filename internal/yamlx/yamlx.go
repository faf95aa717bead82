// Package yamlx decodes YAML strictly from yaml.Node trees, so every error can
// name the file, the line and the field path.
package yamlx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Error is bad input at a field of a file. Any part may be empty.
type Error struct {
	File string // file name as the user gave it
	Line int    // 1-based; 0 when unknown
	Path string // field path such as clients[2].segments[0]
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errorf returns an *Error at node n (may be nil). String arguments longer
// than maxEcho bytes are cut to an excerpt: an error must not repeat a file
// the spec pointed at (into a CI log) or a megabyte of input.
func Errorf(n *yaml.Node, path, format string, args ...any) *Error {
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > maxEcho {
			args[i] = s[:maxEcho] + "…"
		}
	}
	e := &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

// maxEcho bounds a string argument of Errorf, in bytes.
const maxEcho = 200

// Excerpt quotes the start of an input value for an error message: at most
// 40 characters and 80 bytes of it, escaped as a Go string (strconv.Quote),
// with the full length in bytes when cut. Every error that repeats what a
// user or a file gave (a name, a flag's value, a manifest entry) quotes it
// through Excerpt.
func Excerpt(s string) string {
	const maxChars, maxBytes = 40, 80
	for i, n := 0, 0; i < len(s); n++ { // i: byte offset of character n
		_, size := utf8.DecodeRuneInString(s[i:])
		if n == maxChars || i+size > maxBytes {
			return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:i]), len(s))
		}
		i += size
	}
	return strconv.Quote(s)
}

// InFile sets the file of err when err is an *Error without one, and wraps any
// other error with the file name.
func InFile(err error, file string) error {
	if err == nil {
		return nil
	}
	var es *Errors
	if errors.As(err, &es) {
		for _, e := range es.List {
			if e.File == "" {
				e.File = file
			}
		}
		return es
	}
	var e *Error
	if errors.As(err, &e) {
		if e.File == "" {
			e.File = file
		}
		return e
	}
	return &Error{File: file, Msg: err.Error()}
}

// Parse parses data into a document node and returns its root value, or an
// *Error for empty or malformed input.
func Parse(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) {
		return nil, &Error{Msg: "empty file: expected a YAML mapping"}
	}
	if err == nil {
		var next yaml.Node
		switch derr := dec.Decode(&next); {
		case derr == nil && !emptyDoc(&next):
			return nil, &Error{Line: next.Line, Msg: "a second YAML document (after ---): a file holds one document; remove the rest or split the file"}
		case !errors.Is(derr, io.EOF):
			err = derr
		}
	}
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		e := &Error{Msg: "invalid YAML: " + msg}
		if l, rest, ok := cutLine(msg); ok {
			e.Line, e.Msg = l, "invalid YAML: "+rest
		}
		return nil, e
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Error{Msg: "empty file: expected a YAML mapping"}
	}
	return doc.Content[0], nil
}

// emptyDoc reports whether a document holds nothing (a trailing "---").
func emptyDoc(d *yaml.Node) bool {
	return len(d.Content) == 0 || (d.Content[0].Kind == yaml.ScalarNode && d.Content[0].Tag == "!!null" && d.Content[0].Value == "")
}

func cutLine(msg string) (int, string, bool) {
	rest, ok := strings.CutPrefix(msg, "line ")
	if !ok {
		return 0, "", false
	}
	num, tail, ok := strings.Cut(rest, ":")
	if !ok {
		return 0, "", false
	}
	l, err := strconv.Atoi(num)
	if err != nil {
		return 0, "", false
	}
	return l, strings.TrimSpace(tail), true
}

// Map is a decoded mapping: its keys' value nodes, in order, with their lines.
type Map struct {
	Node   *yaml.Node
	Path   string
	values map[string]*yaml.Node
}

// Mapping checks that n is a mapping whose keys are all in allowed. The
// error lists every unknown or repeated key (an unknown one with the allowed
// key it most likely meant); m holds the allowed keys whenever n is a
// mapping, so a caller collecting errors can go on decoding them.
func Mapping(n *yaml.Node, path string, allowed ...string) (m *Map, err error) {
	if n.Kind != yaml.MappingNode {
		return nil, Errorf(n, path, "expected a mapping, got %s", kind(n))
	}
	m = &Map{Node: n, Path: path, values: map[string]*yaml.Node{}}
	var c Collector
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !contains(allowed, k.Value) {
			c.Errorf(k, join(path, k.Value), "unknown field%s (allowed: %s)", DidYouMean(k.Value, allowed), strings.Join(allowed, ", "))
			continue
		}
		if _, dup := m.values[k.Value]; dup {
			c.Errorf(k, join(path, k.Value), "field given twice")
			continue
		}
		m.values[k.Value] = v
	}
	return m, c.Err()
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Has reports whether key is present.
func (m *Map) Has(key string) bool { _, ok := m.values[key]; return ok }

// Get returns the value node of key, or nil.
func (m *Map) Get(key string) *yaml.Node { return m.values[key] }

// FieldPath returns the path of key inside m.
func (m *Map) FieldPath(key string) string { return join(m.Path, key) }

// Require returns the value node of key or a "missing" error.
func (m *Map) Require(key string) (*yaml.Node, error) {
	if v := m.values[key]; v != nil {
		return v, nil
	}
	return nil, Errorf(m.Node, m.FieldPath(key), "missing")
}

// String decodes a required string field.
func (m *Map) String(key string) (string, error) {
	v, err := m.Require(key)
	if err != nil {
		return "", err
	}
	return Str(v, m.FieldPath(key))
}

// OptString decodes an optional string field ("" when absent).
func (m *Map) OptString(key string) (string, error) {
	v := m.values[key]
	if v == nil {
		return "", nil
	}
	return Str(v, m.FieldPath(key))
}

// Str decodes a scalar string.
func Str(n *yaml.Node, path string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", Errorf(n, path, "expected a string, got %s", kind(n))
	}
	if n.Value == "" {
		return "", Errorf(n, path, "must not be empty")
	}
	return n.Value, nil
}

// Float decodes a finite number.
func Float(n *yaml.Node, path string) (float64, error) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		return 0, Errorf(n, path, "expected a number, got %s", kind(n))
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil {
		// .nan, .inf and friends
		var v float64
		if derr := n.Decode(&v); derr != nil {
			return 0, Errorf(n, path, "expected a number, got %s", Excerpt(n.Value))
		}
		f = v
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, Errorf(n, path, "must be a finite number, got %s", Excerpt(n.Value))
	}
	return f, nil
}

// Int decodes a whole number.
func Int(n *yaml.Node, path string) (int64, error) {
	f, err := Float(n, path)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, Errorf(n, path, "expected a whole number, got %s", Excerpt(n.Value))
	}
	return int64(f), nil
}

// Seq checks that n is a sequence and returns its items.
func Seq(n *yaml.Node, path string) ([]*yaml.Node, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, Errorf(n, path, "expected a list, got %s", kind(n))
	}
	return n.Content, nil
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing (null)"
		}
		return Excerpt(n.Value)
	}
	return "nothing"
}

// Locate returns the node at a field path such as "clients[2].segments[0]"
// below root, or the deepest node found on the way (for error lines).
func Locate(root *yaml.Node, path string) *yaml.Node {
	n := root
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			continue
		}
		name, idx, _ := strings.Cut(part, "[")
		if name != "" {
			next := lookup(n, name)
			if next == nil {
				return n
			}
			n = next
		}
		for idx != "" {
			num, rest, _ := strings.Cut(idx, "]")
			i, err := strconv.Atoi(num)
			if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return n
			}
			n = n.Content[i]
			idx = strings.TrimPrefix(rest, "[")
		}
	}
	return n
}

func lookup(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// Foreign reports whether data is not a YAML mapping with at least one of
// keys at its top: binary bytes, a scalar or a list, or a mapping of some
// other program's keys. Decoding such a file would quote its content in
// errors (a credential, the first line of /etc/shadow); callers say
// ForeignError instead. A YAML syntax error is not foreign: its message
// quotes no content and names the line.
func Foreign(data []byte, keys ...string) bool {
	if !utf8.Valid(data) || bytes.ContainsFunc(data, func(r rune) bool {
		return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f
	}) {
		return true
	}
	var doc yaml.Node
	if yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc) != nil || len(doc.Content) == 0 {
		return false
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return true
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if slices.Contains(keys, root.Content[i].Value) {
			return false
		}
	}
	return len(root.Content) > 0
}

// ForeignError is the error for a Foreign file that should have been a
// what ("sweep spec", "scenario"); it quotes nothing of the file.
func ForeignError(what string) *Error {
	return &Error{Msg: "not a YAML mapping of a " + what + " (binary or foreign file?)"}
}
