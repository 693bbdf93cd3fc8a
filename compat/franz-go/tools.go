//go:build tools

// Package franzgo only exists to keep franz-go's kgo package (and with it, its dependencies) in
// go.mod and go.sum, so `go test -c github.com/twmb/franz-go/pkg/kgo` builds from this module.
package franzgo

import _ "github.com/twmb/franz-go/pkg/kgo"
