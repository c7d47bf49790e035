package hold

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
)

// LoadCABundle implements OCTOSTORE_CA_BUNDLE (docs/protocol.md "HTTP client")
// for every authority that speaks TLS. value is nil when the variable is
// unset; when set (even to "") it names a PEM file whose certificates are
// added to the system roots, never replacing them. Blocks other than
// CERTIFICATE (keys, CRLs) are ignored, as rustls-pemfile does; a damaged
// block is an error, so a bad bundle never quietly trusts less.
func LoadCABundle(value *string) (*x509.CertPool, error) {
	if value == nil {
		return nil, nil
	}
	path := *value
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorCause(ErrCABundle, "could not read OCTOSTORE_CA_BUNDLE "+path+": "+osErrorText(err), err)
	}
	certs, err := parsePEMCertificates(data)
	if err != nil {
		return nil, usageErrorCause(ErrCABundle, "could not parse OCTOSTORE_CA_BUNDLE: "+err.Error(), err)
	}
	if len(certs) == 0 {
		return nil, usageError(ErrCABundle, "OCTOSTORE_CA_BUNDLE contains no certificates")
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		// Without readable system roots the bundle is still honoured; the
		// upstream client likewise adds to whatever native roots it found.
		pool = x509.NewCertPool()
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

type pemError string

func (e pemError) Error() string { return string(e) }

// parsePEMCertificates returns every CERTIFICATE block. Unlike pem.Decode
// alone, a BEGIN line that does not start a well-formed block is an error
// rather than silently skipped: a damaged bundle must not quietly trust less.
func parsePEMCertificates(data []byte) ([]*x509.Certificate, error) {
	const begin = "-----BEGIN "
	var certs []*x509.Certificate
	for {
		i := bytes.Index(data, []byte(begin))
		if i < 0 {
			return certs, nil
		}
		block, rest := pem.Decode(data[i:])
		// pem.Decode skips a damaged block and returns the next good one, so
		// the consumed span must contain exactly the one BEGIN we started at.
		consumed := data[i : len(data)-len(rest)]
		if block == nil || bytes.Count(consumed, []byte(begin)) != 1 {
			return nil, pemError("malformed PEM section")
		}
		data = rest
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
}
