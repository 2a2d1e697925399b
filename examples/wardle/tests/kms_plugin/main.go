// A KMS v2 plugin for the encryption-at-rest tests (examples/wardle/tests/encryption_kms.rs):
// upstream's gRPC service (k8s.io/kms/pkg/service, the KeyManagementService of
// k8s.io/kms/apis/v2 on a unix socket) over a small Service that wraps DEKs with AES-256-GCM.
//
// The key encryption key of a key ID is SHA-256(secret ":" keyID); the current key ID is the
// trimmed content of --key-id-file, read on every call, so a test rotates the KMS key by
// rewriting that file. Each Encrypt and Decrypt call is logged on standard error
// ("encrypt keyID=..." / "decrypt keyID=...") so a test can count how often the server
// asked for a DEK.
package main

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/kms/pkg/service"
)

const annotation = "kms-plugin.wardle.example.com"

type plugin struct {
	secret    string
	keyIDFile string
}

func (p *plugin) keyID() (string, error) {
	data, err := os.ReadFile(p.keyIDFile)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(data))
	if id == "" {
		return "", errors.New("the key ID file is empty")
	}
	return id, nil
}

func (p *plugin) aead(keyID string) (cipher.AEAD, error) {
	kek := sha256.Sum256([]byte(p.secret + ":" + keyID))
	block, err := aes.NewCipher(kek[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func (p *plugin) Encrypt(_ context.Context, uid string, data []byte) (*service.EncryptResponse, error) {
	keyID, err := p.keyID()
	if err != nil {
		return nil, err
	}
	aead, err := p.aead(keyID)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	log.Printf("encrypt keyID=%s uid=%s", keyID, uid)
	return &service.EncryptResponse{
		Ciphertext:  aead.Seal(nonce, nonce, data, []byte(keyID)),
		KeyID:       keyID,
		Annotations: map[string][]byte{annotation: []byte("v1")},
	}, nil
}

func (p *plugin) Decrypt(_ context.Context, uid string, req *service.DecryptRequest) ([]byte, error) {
	if string(req.Annotations[annotation]) != "v1" {
		return nil, fmt.Errorf("annotation %s missing", annotation)
	}
	aead, err := p.aead(req.KeyID)
	if err != nil {
		return nil, err
	}
	if len(req.Ciphertext) < aead.NonceSize() {
		return nil, errors.New("ciphertext too short")
	}
	n := aead.NonceSize()
	log.Printf("decrypt keyID=%s uid=%s", req.KeyID, uid)
	return aead.Open(nil, req.Ciphertext[:n], req.Ciphertext[n:], []byte(req.KeyID))
}

func (p *plugin) Status(_ context.Context) (*service.StatusResponse, error) {
	keyID, err := p.keyID()
	if err != nil {
		return nil, err
	}
	return &service.StatusResponse{Version: "v2", Healthz: "ok", KeyID: keyID}, nil
}

func main() {
	socket := flag.String("socket", "", "the unix socket to listen on")
	secret := flag.String("secret", "", "the secret the key encryption keys derive from")
	keyIDFile := flag.String("key-id-file", "", "a file holding the current key ID")
	flag.Parse()
	if *socket == "" || *secret == "" || *keyIDFile == "" {
		log.Fatal("--socket, --secret and --key-id-file are required")
	}
	// A socket left by a killed plugin.
	_ = os.Remove(*socket)
	svc := service.NewGRPCService(*socket, 5*time.Second, &plugin{secret: *secret, keyIDFile: *keyIDFile})
	go func() {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
		<-signals
		svc.Close()
	}()
	log.Printf("serving KMS v2 on %s", *socket)
	if err := svc.ListenAndServe(); err != nil {
		log.Printf("stopped: %v", err)
	}
}
