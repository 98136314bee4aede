package alerts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	mail "github.com/wneessen/go-mail"
)

// sendEmail sends m to addrs through the configured SMTP server. The alert
// id is the message's Message-ID and an X-ReadPast-Alert-Id header, so a
// mailbox or a script can drop a second copy.
func (s *SMTP) sendEmail(ctx context.Context, addrs []string, m Message) error {
	msg := mail.NewMsg()
	if err := msg.From(s.From); err != nil {
		return fmt.Errorf("smtp from %q: %w", s.From, err)
	}
	if err := msg.To(addrs...); err != nil {
		return fmt.Errorf("e-mail addresses: %w", err)
	}
	msg.Subject(m.emailSubject())
	msg.SetBodyString(mail.TypeTextPlain, m.emailBody())
	msg.SetMessageIDWithValue(m.AlertID + "@readpast")
	msg.SetGenHeader("X-ReadPast-Alert-Id", m.AlertID)
	msg.SetDate()
	opts, err := s.clientOptions()
	if err != nil {
		return err
	}
	c, err := mail.NewClient(s.Host, opts...)
	if err != nil {
		return fmt.Errorf("smtp %s: %w", s.Host, err)
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("sending e-mail through %s:%d: %w", s.Host, s.port(), err)
	}
	return nil
}

func (s *SMTP) port() int {
	switch {
	case s.Port != 0:
		return s.Port
	case s.TLS == "tls":
		return 465
	case s.TLS == "none":
		return 25
	}
	return 587
}

// clientOptions are go-mail's options for the configured server: TLS
// mandatory unless "none" (STARTTLS must succeed, or implicit TLS), and
// authentication only when a user name is given.
func (s *SMTP) clientOptions() ([]mail.Option, error) {
	tc := &tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("smtp ca_file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("smtp ca_file %s holds no PEM certificate", s.CAFile)
		}
		tc.RootCAs = pool
	}
	opts := []mail.Option{mail.WithPort(s.port()), mail.WithTLSConfig(tc)}
	switch s.TLS {
	case "tls":
		opts = append(opts, mail.WithSSL())
	case "none":
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	}
	if s.Username != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(s.Username), mail.WithPassword(s.Password))
	}
	return opts, nil
}
