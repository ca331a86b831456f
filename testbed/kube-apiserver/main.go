// kube-apiserver, built from the published Kubernetes modules: the real API server Tower's tests run the
// platform's clusters on (`cargo xtask kube`). Nothing here but the upstream command.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
