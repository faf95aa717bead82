package yamlx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// DefaultMaxFileBytes is the largest spec, scenario, rules or keys file
// ReadFile accepts unless SetMaxFileBytes raises it (16 MiB).
const DefaultMaxFileBytes = 16 << 20

var maxFileBytes atomic.Int64

func init() { maxFileBytes.Store(DefaultMaxFileBytes) }

// MaxFileBytes is the size cap of ReadFile, bytes.
func MaxFileBytes() int64 { return maxFileBytes.Load() }

// SetMaxFileBytes sets the size cap of ReadFile, bytes (n <= 0: the default).
func SetMaxFileBytes(n int64) {
	if n <= 0 {
		n = DefaultMaxFileBytes
	}
	maxFileBytes.Store(n)
}

// ReadFile reads a user's input file (a spec, a scenario, a rules or keys
// file): it must be a regular file of at most MaxFileBytes, and is read with
// that limit, so a device, a named pipe or a file that grows while it is read
// never exhausts memory. Errors are *Error naming the file.
func ReadFile(path string) ([]byte, error) {
	limit := MaxFileBytes()
	st, err := os.Stat(path)
	if err != nil {
		return nil, &Error{File: path, Msg: plainErr(err)}
	}
	if err := checkRegular(path, st, limit); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Msg: plainErr(err)}
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil { // the file opened may not be the one stat saw
		return nil, &Error{File: path, Msg: plainErr(err)}
	}
	if err := checkRegular(path, st, limit); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &Error{File: path, Msg: plainErr(err)}
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, limit)
	}
	return data, nil
}

func checkRegular(path string, st fs.FileInfo, limit int64) error {
	switch m := st.Mode(); {
	case m.IsDir():
		return &Error{File: path, Msg: "is a directory, expected a YAML file"}
	case !m.IsRegular():
		return &Error{File: path, Msg: fmt.Sprintf("is not a regular file (%s), expected a YAML file", fileKind(m))}
	case st.Size() > limit:
		return tooLarge(path, limit)
	}
	return nil
}

func tooLarge(path string, limit int64) error {
	return &Error{File: path, Msg: fmt.Sprintf("larger than %s, the limit for input files; raise it with RATESWEEP_MAX_INPUT (e.g. RATESWEEP_MAX_INPUT=64MiB)", FormatBytes(limit))}
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

func plainErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// FormatBytes writes n with a binary unit (B, KiB, MiB, GiB, TiB).
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

// ParseBytes parses a size such as 16777216, 64MiB, 2GB or 1.5GiB (decimal
// units are powers of 1000, binary ones of 1024).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kb": 1e3, "kib": 1 << 10, "m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1e9, "gib": 1 << 30, "t": 1 << 40, "tb": 1e12, "tib": 1 << 40}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v < 0 || v*mult >= 1<<62 {
		return 0, fmt.Errorf("%q is not a size (e.g. 64MiB, 2GB, 1048576)", s)
	}
	return int64(v * mult), nil
}
