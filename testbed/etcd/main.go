// etcd, built from its published module: the store the real API servers of Tower's tests share, each
// cluster under its own prefix (`cargo xtask kube`). Its own module, so its dependencies never have to
// agree with kube-apiserver's. Nothing here but the upstream command.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
