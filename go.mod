module github.com/ratesweep/ratesweep

go 1.26.0

require (
	github.com/spf13/pflag v1.1.0
	go.yaml.in/yaml/v3 v3.0.6
)
