// franz-go's kgo integration tests, run unmodified against kafka-wire (compat/franz_go_suite.py).
// This module only pins the franz-go release; compat/setup-franz-go.sh downloads it from the Go
// module proxy and compiles its pkg/kgo tests (`go test -c`) into .deps/franz-go/.
module kafkawire/compat/franzgo

go 1.26.0

require github.com/twmb/franz-go v1.22.3

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.1 // indirect
)
