package alerts_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"readpast/internal/alerts"
)

// testCert is a certificate for 127.0.0.1 and the PEM file of it, trusted
// by the SMTP configuration's ca_file.
func testCert(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "readpast test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, path
}

// mail is one message the SMTP server received.
type mail struct {
	From string
	To   []string
	Data string
	TLS  bool   // the session was encrypted when the message came
	User string // the login it authenticated as
}

// smtpServer is a real SMTP server (go-smtp) on 127.0.0.1 that keeps what
// it receives. Mode "starttls" offers STARTTLS, "tls" speaks TLS from the
// first byte, "plain" offers no TLS at all.
type smtpServer struct {
	Port       int
	mu         sync.Mutex
	mail       []mail
	user, pass string
}

func startSMTP(t *testing.T, mode string, cert tls.Certificate, user, pass string) *smtpServer {
	t.Helper()
	s := &smtpServer{user: user, pass: pass}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &smtpSession{srv: s, conn: c}, nil }))
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	var ln net.Listener
	var err error
	switch mode {
	case "tls":
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		ln, err = tls.Listen("tcp", "127.0.0.1:0", srv.TLSConfig)
	case "starttls":
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	default:
		srv.AllowInsecureAuth = true
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Port = ln.Addr().(*net.TCPAddr).Port
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *smtpServer) received() []mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]mail(nil), s.mail...)
}

type smtpSession struct {
	srv  *smtpServer
	conn *smtp.Conn
	m    mail
}

func (x *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (x *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != x.srv.user || pass != x.srv.pass {
			return errors.New("bad login")
		}
		x.m.User = user
		return nil
	}), nil
}

func (x *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if x.srv.user != "" && x.m.User == "" {
		return &smtp.SMTPError{Code: 530, Message: "authentication required"}
	}
	x.m.From = from
	return nil
}
func (x *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.m.To = append(x.m.To, to)
	return nil
}
func (x *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, x.m.TLS = x.conn.TLSConnectionState()
	x.m.Data = string(b)
	x.srv.mu.Lock()
	x.srv.mail = append(x.srv.mail, x.m)
	x.srv.mu.Unlock()
	x.m = mail{User: x.m.User}
	return nil
}
func (x *smtpSession) Reset()        { x.m = mail{User: x.m.User} }
func (x *smtpSession) Logout() error { return nil }

// hook is one webhook request the receiver accepted.
type hook struct {
	AlertID string
	Body    []byte
	Path    string
}

// receiver is a local HTTP server that checks every request's signature
// as docs/ALERTS.md tells receivers to, refuses the first failFirst
// requests of each alert id (a receiver that is down), and keeps what it
// accepted.
type receiver struct {
	URL       string
	secret    string
	failFirst int
	mu        sync.Mutex
	tries     map[string]int
	got       []hook
	badSig    int
	hang      chan struct{} // when set, requests wait on it (a node killed mid-send)
}

func startReceiver(t *testing.T, secret string, failFirst int) *receiver {
	t.Helper()
	rc := &receiver{secret: secret, failFirst: failFirst, tries: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL
	return rc
}

// verify is the receiver's check, as docs/ALERTS.md gives it.
func verify(secret string, r *http.Request, body []byte) bool {
	ts, err := strconv.ParseInt(r.Header.Get("X-ReadPast-Timestamp"), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10) + "." + string(body)))
	return hmac.Equal([]byte(r.Header.Get("X-ReadPast-Signature")), []byte("v1="+hex.EncodeToString(mac.Sum(nil))))
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !verify(rc.secret, r, body) {
		rc.mu.Lock()
		rc.badSig++
		rc.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	id := r.Header.Get(alerts.HeaderAlertID)
	rc.mu.Lock()
	hang := rc.hang
	rc.tries[id]++
	fail := rc.tries[id] <= rc.failFirst
	rc.mu.Unlock()
	if hang != nil {
		<-hang
	}
	if fail {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	rc.mu.Lock()
	rc.got = append(rc.got, hook{AlertID: id, Body: body, Path: r.URL.Path})
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) accepted() []hook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hook(nil), rc.got...)
}

func (rc *receiver) messages(t *testing.T, path string) []alerts.Message {
	var out []alerts.Message
	for _, h := range rc.accepted() {
		if h.Path != path {
			continue
		}
		var m alerts.Message
		if err := json.Unmarshal(h.Body, &m); err != nil {
			t.Fatalf("a plain payload is not a Message: %v: %s", err, h.Body)
		}
		out = append(out, m)
	}
	return out
}

// header reads one header of a raw message.
func header(data, name string) string {
	for _, line := range strings.Split(data, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return v
		}
		if line == "" {
			break
		}
	}
	return ""
}
