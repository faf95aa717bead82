package main

import (
	"io"

	"github.com/ratesweep/ratesweep/internal/textsafe"
)

// escapeWriter writes to w with control characters other than newline and
// tab escaped (\x1b, \u009b), the bidirectional overrides and isolates
// escaped (\u202e), and invalid UTF-8 bytes as \xNN: log keys, client
// names and file names reach stdout, and must not drive the terminal
// (window titles, clearing the screen) or a log viewer, nor reorder a line.
type escapeWriter struct{ w io.Writer }

func (e escapeWriter) Write(p []byte) (int, error) {
	s := string(p)
	if textsafe.Clean(s) {
		return e.w.Write(p)
	}
	if _, err := io.WriteString(e.w, textsafe.Escape(s)); err != nil {
		return 0, err
	}
	return len(p), nil
}
