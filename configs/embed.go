// Package configs embeds ratesweep's scenarios and sweep specs so the binary
// runs its default job with no files beside it.
package configs

import "embed"

// FS holds every YAML file of this directory.
//
//go:embed *.yaml
var FS embed.FS

// Lesson is the lesson's scenario, the default for `tables`.
//
//go:embed lesson.yaml
var Lesson []byte
