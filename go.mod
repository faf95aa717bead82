module github.com/ratesweep/ratesweep

go 1.26.0

require (
	github.com/RussellLuo/slidingwindow v0.0.0-20200528002341-535bb99d338b
	github.com/spf13/pflag v1.1.0
	github.com/throttled/throttled/v2 v2.15.0
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/time v0.16.0
	gonum.org/v1/gonum v0.17.0
)

require github.com/hashicorp/golang-lru v0.5.4 // indirect
