package devcluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ringfire/ringfire/internal/certs"
)

// contextName is the only context in every kubeconfig the harness writes.
const contextName = "ringfire-e2e"

// writeKubeconfig writes a self-contained kubeconfig (certificates inline)
// for one client identity of the cluster at server.
func writeKubeconfig(path, server string, caPEM []byte, id certs.Pair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: id.Cert,
		ClientKeyData:         id.Key,
	}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	cfg.CurrentContext = contextName
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// restConfigFor returns the client configuration of one identity.
func restConfigFor(server string, caPEM []byte, id certs.Pair) *rest.Config {
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   caPEM,
			CertData: id.Cert,
			KeyData:  id.Key,
		},
		// Tests create objects in bursts; the client-side limiter must not be
		// what they measure.
		QPS:   200,
		Burst: 400,
	}
}
