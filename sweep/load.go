// Package sweep expands sweep specs into grids of policies, runs them across
// goroutines and writes every outcome to Parquet via Apache Arrow, resumably.
package sweep

import (
	"fmt"
	"io/fs"

	"github.com/ratesweep/ratesweep/configs"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// ReadInput reads a user's input file, with errors that name it: a missing
// file, a directory, a device or named pipe, a file larger than
// yamlx.MaxFileBytes, an unreadable or empty file are *yamlx.Error.
func ReadInput(path string) ([]byte, error) { return yamlx.ReadFile(path) }

func plainErr(err error) string {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// LoadScenario reads and validates a scenario file; path "" is the lesson's
// embedded scenario.
func LoadScenario(path string) (*model.Scenario, error) {
	if path == "" {
		sc, err := model.ParseScenario(configs.Lesson)
		if err != nil {
			return nil, fmt.Errorf("embedded lesson scenario: %w", err)
		}
		return sc, nil
	}
	data, err := ReadInput(path)
	if err != nil {
		return nil, err
	}
	if yamlx.Foreign(data, scenarioKeys...) {
		return nil, yamlx.InFile(yamlx.ForeignError("scenario"), path)
	}
	sc, err := model.ParseScenario(data)
	return sc, yamlx.InFile(err, path)
}

// scenarioKeys are a scenario file's top-level fields (model's decoder
// holds the same list): a file with none of them is not a scenario.
var scenarioKeys = []string{"name", "duration_s", "arrivals", "clients"}
