package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers/mail"
)

// Demo account: fixed names; the password and API key are derived from the
// development session key under DATA_DIR, so they are stable across runs
// (the command is idempotent and can print them every time) yet differ
// between installations.
const (
	demoEmail   = "demo@clusterdeck.local"
	demoName    = "Demo Owner"
	demoOrgName = "Demo Org"
	demoKeyName = "demo"
)

var demoEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func demoSecret(key []byte, label string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("clusterdeck demo " + label))
	return demoEncoding.EncodeToString(mac.Sum(nil)[:20]) // 32 characters
}

// demo creates (or repairs) the demo organisation, its owner, an API key for
// its default environment and a test-mode balance, and prints the
// credentials as `email:`, `password:` and `api_key:` lines. Development only.
func demo(ctx context.Context, cfg config, log *slog.Logger, stdout io.Writer) error {
	if cfg.Production {
		return errors.New("demo is for development only: it refuses to run with CLUSTERDECK_ENV=production")
	}
	db, err := openDB(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeDB(db)
	if err := cfg.loadDevSessionKeys(ctx, db); err != nil {
		return fmt.Errorf("development session keys: %w", err)
	}
	password := "demo-" + demoSecret(cfg.SessionAuthKey, "password")[:16]
	token := models.APIKeyScheme + demoSecret(cfg.SessionAuthKey, "api key")
	store := models.NewStore(db, nil)

	u, err := store.UserByEmail(ctx, demoEmail)
	switch {
	case errors.Is(err, models.ErrNotFound):
		if u, _, err = store.Signup(ctx, models.SignupInput{Email: demoEmail, Name: demoName, Password: password,
			OrgName: demoOrgName, MaxMachines: cfg.DefaultMaxMachines, MaxGPUs: cfg.DefaultMaxGPUs}, "127.0.0.1"); err != nil {
			return fmt.Errorf("demo user: %w", err)
		}
	case err != nil:
		return err
	default:
		// Someone changed the password: put the printed one back (this keeps
		// existing sessions when it still matches).
		if _, err := store.Authenticate(ctx, demoEmail, password); err != nil {
			if u, err = store.SetPassword(ctx, u.ID, password); err != nil {
				return err
			}
		}
	}
	org, err := demoOrg(ctx, store, u, cfg)
	if err != nil {
		return err
	}
	env, err := store.DefaultEnvironment(ctx, org.ID)
	if err != nil {
		return err
	}
	if _, err := store.EnsureAPIKey(ctx, org.ID, env.ID, u.ID, demoKeyName, token); err != nil {
		return fmt.Errorf("demo api key: %w", err)
	}
	if err := seedDemoBalance(ctx, store, org); err != nil {
		return fmt.Errorf("demo balance: %w", err)
	}
	// Development only (refused in production above): the demo user reaches
	// the operator's pages too, so a newcomer sees both sides.
	if _, err := store.SetOperator(ctx, demoEmail, true); err != nil {
		return fmt.Errorf("demo operator: %w", err)
	}
	fmt.Fprintf(stdout, "Demo organisation %q (environment %q) is ready; log in at %s/login\n", org.Name, env.Name, cfg.BaseURL)
	fmt.Fprintf(stdout, "email: %s\npassword: %s\napi_key: %s\n", demoEmail, password, token)
	return nil
}

// demoOrg finds the demo user's own "Demo Org", creating it if it is gone.
func demoOrg(ctx context.Context, store *models.Store, u models.User, cfg config) (models.Org, error) {
	orgs, err := store.OrgsForUser(ctx, u.ID)
	if err != nil {
		return models.Org{}, err
	}
	for _, o := range orgs {
		if o.OrgName == demoOrgName && o.Role == models.RoleOwner {
			return store.OrgByID(ctx, o.OrgID)
		}
	}
	return store.CreateOrg(ctx, demoOrgName, u.ID, cfg.DefaultMaxMachines, cfg.DefaultMaxGPUs)
}

// adminCommand is `clusterdeck admin grant|revoke EMAIL`: the operator flag
// that opens the /admin area.
func adminCommand(ctx context.Context, cfg config, log *slog.Logger, args []string, stdout io.Writer) error {
	if len(args) != 2 || (args[0] != "grant" && args[0] != "revoke") {
		return errors.New("usage: clusterdeck admin grant EMAIL | clusterdeck admin revoke EMAIL")
	}
	db, err := openDB(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeDB(db)
	store := models.NewStore(db, nil)
	u, err := store.SetOperator(ctx, args[1], args[0] == "grant")
	if errors.Is(err, models.ErrNotFound) {
		return fmt.Errorf("no user has the email %q: they must sign up first", models.NormalizeEmail(args[1]))
	}
	if err != nil {
		return err
	}
	if u.IsOperator {
		fmt.Fprintf(stdout, "%s is now an operator: the admin area is at %s/admin\n", u.Email, cfg.BaseURL)
	} else {
		fmt.Fprintf(stdout, "%s is no longer an operator\n", u.Email)
	}
	return nil
}

// buildMailer picks the mail job's sender: SMTP when SMTP_URL is set, the
// development mailbox otherwise; in production without SMTP_URL there is
// none, and mail waits in the outbox.
func buildMailer(cfg config, clock models.Clock, log *slog.Logger) (jobs.Mailer, error) {
	switch {
	case cfg.SMTPURL != "":
		s, err := mail.NewSMTP(cfg.SMTPURL, cfg.MailFrom, mail.WithClock(clock.Now))
		if err != nil {
			return nil, fmt.Errorf("SMTP_URL: %w", err)
		}
		return mailAdapter{s}, nil
	case !cfg.Production:
		log.Info("SMTP_URL is unset: mail goes to the development mailbox", "url", cfg.BaseURL+"/dev/mailbox")
		return mailAdapter{mail.DevMailbox{}}, nil
	}
	log.Warn("SMTP_URL is unset: mail stays queued in the outbox until it is set")
	return nil, nil
}

// mailAdapter lets a providers/mail sender serve as the mail job's Mailer.
type mailAdapter struct {
	s interface {
		Send(context.Context, mail.Message) error
		Transport() string
	}
}

func (a mailAdapter) Send(ctx context.Context, m jobs.Message) error {
	return a.s.Send(ctx, mail.Message{Key: m.Key, To: m.To, Subject: m.Subject, Text: m.Text, HTML: m.HTML})
}

func (a mailAdapter) Transport() string { return a.s.Transport() }
