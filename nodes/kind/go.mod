// Builds the `kind` command of sigs.k8s.io/kind v0.33.0 from its published module, for the kind backend and the
// offline kind node image (`lwsconf.kindnode`). Only this go.mod and go.sum are ours. The node image reads kind's own
// node files (images/base/files/) from this module's directory in the Go module cache at build time.
module lwsconf.local/nodes/kind

go 1.26.0

tool sigs.k8s.io/kind

require (
	al.essio.dev/pkg/shellescape v1.5.1 // indirect
	github.com/BurntSushi/toml v1.4.0 // indirect
	github.com/evanphx/json-patch/v5 v5.6.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/pelletier/go-toml v1.9.5 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/spf13/cobra v1.8.0 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/sys v0.6.0 // indirect
	sigs.k8s.io/kind v0.33.0 // indirect
	sigs.k8s.io/yaml v1.4.0 // indirect
)
