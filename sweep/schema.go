package sweep

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/model"
)

// SchemaID names the schemas (they are also committed beside the configs:
// configs/ratesweep.schema.json and configs/scenario.schema.json).
const SchemaID = "https://github.com/ratesweep/ratesweep/configs/"

// SchemaKinds are the documents Schema describes.
var SchemaKinds = []string{"spec", "scenario"}

// Schema returns the JSON Schema (draft 2020-12) of a sweep spec (kind
// "spec") or of a scenario file ("scenario"), generated from the same field
// lists, parameter table and names the decoders check against, for editors
// (VS Code YAML, JetBrains) to complete and check specs.
func Schema(kind string) ([]byte, error) {
	defs := model.SchemaDefs()
	var title, file string
	switch kind {
	case "spec":
		title, file = "ratesweep sweep spec", "ratesweep.schema.json"
		maps.Copy(defs, ingest.SchemaDefs())
		maps.Copy(defs, specDefs())
	case "scenario":
		title, file = "ratesweep scenario", "scenario.schema.json"
	default:
		return nil, fmt.Errorf("unknown schema %q (spec or scenario)", kind)
	}
	s := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$id":     SchemaID + file,
		"title":   title,
		"$ref":    "#/$defs/" + kind,
		"$defs":   defs,
	}
	b, err := json.MarshalIndent(s, "", "  ")
	return append(b, '\n'), err
}

func specDefs() map[string]any {
	var algs []string
	for _, a := range model.Algorithms {
		if a == model.AllOf { // an entry of its own: stack_entry
			continue
		}
		algs = append(algs, a.String())
	}
	props := map[string]any{"algorithm": map[string]any{"enum": algs}, "count_if": countIfSchema()}
	for _, p := range model.Params {
		props[p.Name] = map[string]any{"$ref": "#/$defs/axis_" + p.Name}
	}
	props[blockLevelsKey] = blockLevelsSchema()
	var perAlg []any
	for _, a := range model.Algorithms {
		if a == model.AllOf {
			continue
		}
		names := append([]string{"algorithm", blockLevelsKey, "count_if"}, a.Params()...)
		names = append(names, a.OptionalParams()...)
		perAlg = append(perAlg, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"algorithm": map[string]any{"const": a.String()}}, "required": []string{"algorithm"}},
			"then": map[string]any{"required": a.Params(), "propertyNames": map[string]any{"enum": names}},
		})
	}
	defs := map[string]any{
		"spec": map[string]any{
			"type":                 "object",
			"description":          "A sweep: a workload (a scenario or an access log) and a grid of policies.",
			"additionalProperties": false,
			"required":             []string{"name", "sweep"},
			"propertyNames":        map[string]any{"enum": specKeys},
			"properties": map[string]any{
				"name":       map[string]any{"type": "string", "minLength": 1, "pattern": `^[^/\\]*$`, "not": map[string]any{"enum": []string{".", ".."}}, "description": "names the output directory out/<name>"},
				"scenario":   map[string]any{"oneOf": []any{map[string]any{"type": "string", "minLength": 1, "description": "a scenario file, relative to this spec"}, map[string]any{"$ref": "#/$defs/scenario"}}},
				"traffic":    map[string]any{"$ref": "#/$defs/traffic"},
				"overlay":    map[string]any{"$ref": "#/$defs/overlay"},
				"seed":       map[string]any{"type": "integer", "minimum": 0, "default": 0, "description": "seeds stochastic workloads"},
				"replicates": map[string]any{"type": "integer", "minimum": 1, "maximum": 1_000_000, "default": 1, "description": "realisations of the workload per grid point"},
				"sweep":      map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"oneOf": []any{map[string]any{"$ref": "#/$defs/entry"}, map[string]any{"$ref": "#/$defs/stack_entry"}}}},
				"shard_by":   map[string]any{"enum": shardByNames, "default": "grid", "description": "what --shard I/N splits: grid (parts of the grid) or key (a log's keys or a scenario's clients by FNV-1a 64 hash mod N, the whole grid each; merge adds them up)"},
			},
			"oneOf": []any{map[string]any{"required": []string{"scenario"}}, map[string]any{"required": []string{"traffic"}}},
		},
		"entry": map[string]any{
			"type":                 "object",
			"description":          "One algorithm and its parameter axes; the grid is their cross product.",
			"additionalProperties": false,
			"required":             []string{"algorithm"},
			"properties":           props,
			"allOf":                perAlg,
		},
	}
	for _, p := range model.Params {
		defs["axis_"+p.Name] = axisSchema(p)
	}
	defs["stack_entry"] = stackEntrySchema()
	return defs
}

// axisSchema: a value, a list of values, or a range {from, to, step} /
// {from, to, count[, scale]}.
func axisSchema(p model.Param) map[string]any {
	if p.Values != nil {
		one := map[string]any{"enum": p.Values}
		return map[string]any{"oneOf": []any{one, map[string]any{"type": "array", "minItems": 1, "items": one}}}
	}
	one := map[string]any{"type": "number", "description": p.Unit}
	if p.Int || p.Whole {
		one["type"] = "integer"
	}
	if p.MinOpen {
		one["exclusiveMinimum"] = p.Min
	} else {
		one["minimum"] = p.Min
	}
	one["maximum"] = math.Pow(2, 53)
	num := map[string]any{"type": "number"}
	rng := map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{"from", "to"},
		"propertyNames":        map[string]any{"enum": rangeKeys},
		"properties": map[string]any{
			"from":  num,
			"to":    num,
			"step":  map[string]any{"type": "number", "exclusiveMinimum": 0},
			"count": map[string]any{"type": "integer", "minimum": 1, "maximum": MaxAxisValues},
			"scale": map[string]any{"enum": []string{"linear", "log"}},
		},
		"oneOf": []any{
			map[string]any{"required": []string{"step"}, "not": map[string]any{"required": []string{"scale"}}},
			map[string]any{"required": []string{"count"}},
		},
	}
	return map[string]any{
		"description": fmt.Sprintf("%s (%s): a value, a list, {from, to, step} or {from, to, count, scale: log}", p.Name, p.Unit),
		"oneOf":       []any{one, map[string]any{"type": "array", "minItems": 1, "items": one}, rng},
	}
}
