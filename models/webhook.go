package models

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models/domain"
	"gorm.io/gorm"
)

// WebhookEndpoint is a URL an environment's events are POSTed to (X8): the
// public event types it wants, enabled or paused, and its signing secret.
// During a rotation's overlap the previous secret signs too (two v1=
// signatures), so a receiver can switch without losing an event.
type WebhookEndpoint struct {
	ID           string `gorm:"primaryKey;size:32"`
	OrgID        string `gorm:"size:32;index"`
	EnvID        string `gorm:"size:32;index"`
	URL          string `gorm:"column:url;size:2000"`
	Description  string `gorm:"size:200"`
	Types        string `gorm:"size:1000"` // comma-separated public event types
	Enabled      bool
	PausedReason string `gorm:"size:255"` // why it was paused automatically ("" = by a person, or not paused)
	// The signing secrets are stored sealed (AES-256-GCM under the
	// session encryption key, like SSH machines' keys: SealedSecret, with
	// the endpoint's id as associated data), never in clear; the store
	// opens them to sign (WebhookSecrets). Secret holds the clear secret
	// only on the copy CreateWebhook and RotateWebhookSecret return, to be
	// shown once.
	SealedSecret     string `gorm:"column:secret;size:255"`
	SealedPrevSecret string `gorm:"column:prev_secret;size:255"`
	Secret           string `gorm:"-"`
	PrevSecretUntil  *time.Time
	FailingSince     *time.Time // the first failed attempt since the last success
	ClaimedBy        string     `gorm:"size:64"`
	ClaimedUntil     *time.Time
	CreatedBy        string `gorm:"size:191"`
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// TypeList is the endpoint's event types.
func (w WebhookEndpoint) TypeList() []string {
	if w.Types == "" {
		return []string{}
	}
	return strings.Split(w.Types, ",")
}

// Wants reports whether the endpoint subscribes to typ.
func (w WebhookEndpoint) Wants(typ string) bool { return slices.Contains(w.TypeList(), typ) }

// InOverlap reports whether a rotated-out secret still signs at now.
func (w WebhookEndpoint) InOverlap(now time.Time) bool {
	return w.SealedPrevSecret != "" && w.PrevSecretUntil != nil && now.Before(*w.PrevSecretUntil)
}

// WebhookSecrets opens the secrets that sign a delivery of w at the
// store's now: the current one and, inside a rotation's overlap, the
// previous one.
func (s *Store) WebhookSecrets(w WebhookEndpoint) ([]string, error) {
	cur, err := s.openWebhookSecret(w.ID, w.SealedSecret)
	if err != nil {
		return nil, err
	}
	out := []string{cur}
	if w.InOverlap(s.Now()) {
		prev, err := s.openWebhookSecret(w.ID, w.SealedPrevSecret)
		if err != nil {
			return nil, err
		}
		out = append(out, prev)
	}
	return out, nil
}

// sealedPrefix marks a sealed secret (a row written before sealing holds
// the clear "whsec_…", which SealWebhookSecrets seals at start-up).
const sealedPrefix = "sealed1:"

func (s *Store) sealWebhookSecret(endpointID, secret string) (string, error) {
	aead, err := machineKeyAEAD(s.settings.MachineKeySecret)
	if err != nil {
		return "", errors.New("models: no session encryption key to seal webhook secrets with")
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return sealedPrefix + base64.StdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(secret), []byte("webhook:"+endpointID))), nil
}

func (s *Store) openWebhookSecret(endpointID, sealed string) (string, error) {
	b64, ok := strings.CutPrefix(sealed, sealedPrefix)
	if !ok {
		return "", fmt.Errorf("models: the signing secret of webhook endpoint %s is not sealed", endpointID)
	}
	aead, err := machineKeyAEAD(s.settings.MachineKeySecret)
	if err != nil {
		return "", errors.New("models: no session encryption key to open webhook secrets with")
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) < aead.NonceSize() {
		return "", fmt.Errorf("models: the signing secret of webhook endpoint %s is not readable", endpointID)
	}
	secret, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte("webhook:"+endpointID))
	if err != nil {
		return "", fmt.Errorf("models: the signing secret of webhook endpoint %s does not open with this SESSION_ENC_KEY", endpointID)
	}
	return string(secret), nil
}

// SealWebhookSecrets seals every secret still stored in clear (rows
// written before secrets were sealed); it returns how many endpoints it
// sealed. The server runs it at start-up.
func (s *Store) SealWebhookSecrets(ctx context.Context) (int, error) {
	var rows []WebhookEndpoint
	if err := s.db.WithContext(ctx).Where("secret NOT LIKE ? OR (prev_secret <> '' AND prev_secret NOT LIKE ?)",
		sealedPrefix+"%", sealedPrefix+"%").Find(&rows).Error; err != nil {
		return 0, err
	}
	for _, w := range rows {
		set := map[string]any{}
		for col, v := range map[string]string{"secret": w.SealedSecret, "prev_secret": w.SealedPrevSecret} {
			if v == "" || strings.HasPrefix(v, sealedPrefix) {
				continue
			}
			sealed, err := s.sealWebhookSecret(w.ID, v)
			if err != nil {
				return 0, err
			}
			set[col] = sealed
		}
		if err := s.db.WithContext(ctx).Model(&WebhookEndpoint{}).Where("id = ? AND secret = ? AND prev_secret = ?", w.ID, w.SealedSecret, w.SealedPrevSecret).
			Updates(set).Error; err != nil {
			return 0, err
		}
	}
	return len(rows), nil
}

// Webhook settings (X8).
const (
	WebhookRetryFor       = 72 * time.Hour // a delivery is retried this long; an endpoint failing this long is paused
	WebhookLogDays        = 30             // the delivery log keeps this many days
	WebhookMaxEndpoints   = 20             // per environment
	WebhookDefaultOverlap = 24 * time.Hour // a rotated secret keeps signing this long by default
	WebhookMaxOverlap     = 7 * 24 * time.Hour
)

func up0995WebhookSecretsSealed(tx *gorm.DB) error {
	// Signing secrets are stored sealed (A5): room for the nonce, the
	// tag and base64. SQLite does not bound varchar; the server seals
	// the rows written before at start-up (SealWebhookSecrets), since
	// a migration has no key.
	if tx.Dialector.Name() != "postgres" {
		return nil
	}
	return tx.Exec("ALTER TABLE webhook_endpoints ALTER COLUMN secret TYPE varchar(255), ALTER COLUMN prev_secret TYPE varchar(255)").Error
}

func up0950Webhooks(tx *gorm.DB) error {
	type webhookEndpoint struct {
		ID              string `gorm:"primaryKey;size:32"`
		OrgID           string `gorm:"size:32;index:idx_webhook_endpoints_org"`
		EnvID           string `gorm:"size:32;index:idx_webhook_endpoints_env"`
		URL             string `gorm:"column:url;size:2000"`
		Description     string `gorm:"size:200"`
		Types           string `gorm:"size:1000"`
		Enabled         bool
		PausedReason    string `gorm:"size:255"`
		Secret          string `gorm:"size:80"`
		PrevSecret      string `gorm:"size:80"`
		PrevSecretUntil *time.Time
		FailingSince    *time.Time
		ClaimedBy       string `gorm:"size:64"`
		ClaimedUntil    *time.Time
		CreatedBy       string `gorm:"size:191"`
		CreatedAt       time.Time
		UpdatedAt       time.Time
	}
	type webhookDelivery struct {
		ID            int64  `gorm:"primaryKey;autoIncrement"`
		EndpointID    string `gorm:"size:32;uniqueIndex:idx_webhook_deliveries_event,priority:1;index:idx_webhook_deliveries_due,priority:1"`
		OrgID         string `gorm:"size:32"`
		EnvID         string `gorm:"size:32"`
		EventID       string `gorm:"size:40;uniqueIndex:idx_webhook_deliveries_event,priority:2"`
		Type          string `gorm:"size:40"`
		ClusterID     string `gorm:"size:32"`
		Body          string `gorm:"type:text"`
		CreatedAt     time.Time
		Attempts      int
		NextAttemptAt time.Time
		DeliveredAt   *time.Time `gorm:"index:idx_webhook_deliveries_due,priority:2"`
		FailedAt      *time.Time
		LastStatus    int
		LastError     string `gorm:"size:1000"`
	}
	type webhookAttempt struct {
		ID         int64  `gorm:"primaryKey;autoIncrement"`
		DeliveryID int64  `gorm:"index"`
		EndpointID string `gorm:"size:32;index:idx_webhook_attempts_endpoint,priority:1"`
		OrgID      string `gorm:"size:32"`
		EventID    string `gorm:"size:40"`
		Type       string `gorm:"size:40"`
		Attempt    int
		At         time.Time `gorm:"index:idx_webhook_attempts_endpoint,priority:2"`
		Status     int
		DurationMS int64  `gorm:"column:duration_ms"`
		Excerpt    string `gorm:"size:1000"`
		Error      string `gorm:"size:500"`
	}
	if err := tx.Table("webhook_endpoints").Migrator().CreateTable(&webhookEndpoint{}); err != nil {
		return err
	}
	if err := tx.Table("webhook_deliveries").Migrator().CreateTable(&webhookDelivery{}); err != nil {
		return err
	}
	if err := tx.Table("webhook_attempts").Migrator().CreateTable(&webhookAttempt{}); err != nil {
		return err
	}
	return tx.Exec("ALTER TABLE cluster_events ADD COLUMN type VARCHAR(40) NOT NULL DEFAULT ''").Error
}

// WebhookInput is an endpoint as a person sets it.
type WebhookInput struct {
	URL         string
	Description string
	Types       []string
	Enabled     bool
}

// WebhookURLProblem is why raw cannot be an endpoint's URL ("" = fine): an
// absolute https URL without credentials; http only to a loopback host when
// allowLoopback (development).
func WebhookURLProblem(raw string, allowLoopback bool) string {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return "Enter the URL to POST events to."
	case len(raw) > 2000:
		return "The URL is longer than 2,000 characters."
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "Enter an absolute URL starting with https://."
	case u.User != nil:
		return "The URL must not carry a user name or password."
	case u.Fragment != "":
		return "The URL must not have a #fragment."
	}
	loop := domain.LoopbackHost(u.Hostname())
	if u.Scheme == "http" && !(allowLoopback && loop) {
		if allowLoopback {
			return "Use https:// (plain http only to this machine: localhost or 127.0.0.1)."
		}
		return "Use https://: events are signed, but their content is private."
	}
	if !allowLoopback {
		if !domain.PublicHost(u.Hostname()) {
			return "The URL must reach a public address, not a private, loopback or link-local one."
		}
	}
	return ""
}

// WebhookProblems validates in (A4).
func (s *Store) WebhookProblems(in WebhookInput) FieldErrors {
	fe := FieldErrors{}
	if p := WebhookURLProblem(strings.TrimSpace(in.URL), s.settings.WebhookAllowLoopback); p != "" {
		fe["url"] = p
	}
	if len(in.Types) == 0 {
		fe["types"] = "Choose at least one event type."
	}
	for _, t := range in.Types {
		if !IsPublicEventType(t) {
			fe["types"] = fmt.Sprintf("%q is not an event type (one of %s).", t, strings.Join(PublicEventTypes, ", "))
			break
		}
	}
	if len(in.Description) > 200 {
		fe["description"] = "Keep the description under 200 characters."
	}
	if len(fe) == 0 {
		return nil
	}
	return fe
}

// normalTypes is types deduplicated in the vocabulary's order.
func normalTypes(types []string) string {
	var out []string
	for _, t := range PublicEventTypes {
		if slices.Contains(types, t) {
			out = append(out, t)
		}
	}
	return strings.Join(out, ",")
}

func newWebhookSecret() string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("models: random secret: %v", err))
	}
	return "whsec_" + hex.EncodeToString(b[:])
}

func (x Actions) canManageWebhooks() error {
	if !x.a.Role.CanManage() {
		return &ForbiddenError{Message: "Only owners and admins manage webhooks."}
	}
	return nil
}

// webhookURLKey is the URL as a receiver sees it: scheme and host in lower
// case, a default port and an empty path dropped, so "HTTPS://Example.com:443"
// and "https://example.com/" are one endpoint.
func webhookURLKey(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return strings.TrimSpace(raw)
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "https" && p == "443") || (u.Scheme == "http" && p == "80") {
		u.Host = u.Hostname()
	}
	if u.Path == "/" {
		u.Path = ""
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// webhookURLTaken refuses a URL another endpoint of the environment (not
// except) already has (X8): every event would arrive twice. The caller
// holds the organisation's lock, so two creates cannot both pass.
func (s *Store) webhookURLTaken(ctx context.Context, orgID, envID, except, raw string) error {
	ws, err := s.WebhooksFor(ctx, orgID, envID)
	if err != nil {
		return err
	}
	key := webhookURLKey(raw)
	for _, w := range ws {
		if w.ID != except && webhookURLKey(w.URL) == key {
			return FieldErrors{"url": "This environment already has an endpoint for this URL (" + w.ID +
				"): every event would arrive twice. Change that endpoint's events instead, or use another URL."}
		}
	}
	return nil
}

// WebhooksFor lists an environment's endpoints, oldest first.
func (s *Store) WebhooksFor(ctx context.Context, orgID, envID string) ([]WebhookEndpoint, error) {
	var out []WebhookEndpoint
	err := s.db.WithContext(ctx).Where("org_id = ? AND env_id = ?", orgID, envID).Order("created_at, id").Find(&out).Error
	return out, err
}

// WebhookForEnv loads one endpoint through its organisation and
// environment (A3): another's is ErrNotFound.
func (s *Store) WebhookForEnv(ctx context.Context, orgID, envID, id string) (WebhookEndpoint, error) {
	var w WebhookEndpoint
	err := s.db.WithContext(ctx).Where("org_id = ? AND env_id = ? AND id = ?", orgID, envID, id).Take(&w).Error
	return w, notFound(err, "webhook endpoint "+id)
}

// CreateWebhook adds an endpoint to the actor's environment (owners and
// admins, audited). The secret is returned here and by RotateWebhookSecret
// only: pages and the API never show it again.
func (x Actions) CreateWebhook(ctx context.Context, in WebhookInput) (WebhookEndpoint, error) {
	if err := x.canManageWebhooks(); err != nil {
		return WebhookEndpoint{}, err
	}
	in.URL = strings.TrimSpace(in.URL)
	if fe := x.s.WebhookProblems(in); fe != nil {
		return WebhookEndpoint{}, fe
	}
	var w WebhookEndpoint
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		if err := tx.lockOrg(ctx, x.a.OrgID); err != nil { // the count below holds under concurrent creates (A4)
			return nil, err
		}
		var n int64
		if err := tx.db.WithContext(ctx).Model(&WebhookEndpoint{}).Where("org_id = ? AND env_id = ?", x.a.OrgID, x.a.EnvID).Count(&n).Error; err != nil {
			return nil, err
		}
		if n >= WebhookMaxEndpoints {
			return nil, FieldErrors{"url": fmt.Sprintf("An environment has at most %d endpoints; delete one first.", WebhookMaxEndpoints)}
		}
		if err := tx.webhookURLTaken(ctx, x.a.OrgID, x.a.EnvID, "", in.URL); err != nil {
			return nil, err
		}
		now := tx.Now()
		w = WebhookEndpoint{ID: NewID("we"), OrgID: x.a.OrgID, EnvID: x.a.EnvID, URL: in.URL, Description: strings.TrimSpace(in.Description),
			Types: normalTypes(in.Types), Enabled: in.Enabled, Secret: newWebhookSecret(), CreatedBy: x.a.Name, CreatedAt: now, UpdatedAt: now}
		var err error
		if w.SealedSecret, err = tx.sealWebhookSecret(w.ID, w.Secret); err != nil {
			return nil, err
		}
		if err := tx.db.WithContext(ctx).Create(&w).Error; err != nil {
			return nil, err
		}
		return x.audit("webhook.create", w.ID, w.URL+" ("+w.Types+")"), nil
	})
	return w, err
}

// UpdateWebhook changes an endpoint's URL, types, description and whether
// it is enabled (owners and admins, audited). Enabling a paused endpoint
// clears its failure streak; its waiting deliveries go out again.
func (x Actions) UpdateWebhook(ctx context.Context, id string, in WebhookInput) (WebhookEndpoint, error) {
	if err := x.canManageWebhooks(); err != nil {
		return WebhookEndpoint{}, err
	}
	in.URL = strings.TrimSpace(in.URL)
	var w WebhookEndpoint
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if w, err = tx.WebhookForEnv(ctx, x.a.OrgID, x.a.EnvID, id); err != nil {
			return nil, err
		}
		if fe := x.s.WebhookProblems(in); fe != nil {
			return nil, fe
		}
		if err := tx.lockOrg(ctx, x.a.OrgID); err != nil { // against a create of the same URL meanwhile
			return nil, err
		}
		if err := tx.webhookURLTaken(ctx, x.a.OrgID, x.a.EnvID, w.ID, in.URL); err != nil {
			return nil, err
		}
		set := map[string]any{"url": in.URL, "types": normalTypes(in.Types), "description": strings.TrimSpace(in.Description),
			"enabled": in.Enabled, "updated_at": tx.Now()}
		if in.Enabled && !w.Enabled {
			set["paused_reason"], set["failing_since"] = "", nil
		}
		if err := tx.db.WithContext(ctx).Model(&WebhookEndpoint{}).Where("id = ?", w.ID).Updates(set).Error; err != nil {
			return nil, err
		}
		if w, err = tx.WebhookForEnv(ctx, x.a.OrgID, x.a.EnvID, id); err != nil {
			return nil, err
		}
		state := "enabled"
		if !w.Enabled {
			state = "paused"
		}
		return x.audit("webhook.update", w.ID, w.URL+" ("+w.Types+"), "+state), nil
	})
	return w, err
}

// DeleteWebhook removes an endpoint with its pending deliveries and log
// (owners and admins, audited).
func (x Actions) DeleteWebhook(ctx context.Context, id string) (WebhookEndpoint, error) {
	if err := x.canManageWebhooks(); err != nil {
		return WebhookEndpoint{}, err
	}
	var w WebhookEndpoint
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if w, err = tx.WebhookForEnv(ctx, x.a.OrgID, x.a.EnvID, id); err != nil {
			return nil, err
		}
		for _, m := range []any{&WebhookAttempt{}, &WebhookDelivery{}} {
			if err := tx.db.WithContext(ctx).Where("endpoint_id = ?", w.ID).Delete(m).Error; err != nil {
				return nil, err
			}
		}
		if err := tx.db.WithContext(ctx).Delete(&WebhookEndpoint{}, "id = ?", w.ID).Error; err != nil {
			return nil, err
		}
		return x.audit("webhook.delete", w.ID, w.URL), nil
	})
	return w, err
}

// RotateWebhookSecret gives the endpoint a new secret; the old one keeps
// signing for overlap (0 = WebhookDefaultOverlap, at most WebhookMaxOverlap;
// negative = stop at once). Owners and admins, audited.
func (x Actions) RotateWebhookSecret(ctx context.Context, id string, overlap time.Duration) (WebhookEndpoint, error) {
	if err := x.canManageWebhooks(); err != nil {
		return WebhookEndpoint{}, err
	}
	if overlap > WebhookMaxOverlap {
		return WebhookEndpoint{}, FieldErrors{"overlapHours": fmt.Sprintf("The overlap is at most %d hours.", int(WebhookMaxOverlap.Hours()))}
	}
	if overlap == 0 {
		overlap = WebhookDefaultOverlap
	}
	var w WebhookEndpoint
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if w, err = tx.WebhookForEnv(ctx, x.a.OrgID, x.a.EnvID, id); err != nil {
			return nil, err
		}
		now := tx.Now()
		secret := newWebhookSecret()
		sealed, err := tx.sealWebhookSecret(w.ID, secret)
		if err != nil {
			return nil, err
		}
		set := map[string]any{"secret": sealed, "prev_secret": "", "prev_secret_until": nil, "updated_at": now}
		if overlap > 0 {
			set["prev_secret"], set["prev_secret_until"] = w.SealedSecret, now.Add(overlap)
		}
		if err := tx.db.WithContext(ctx).Model(&WebhookEndpoint{}).Where("id = ?", w.ID).Updates(set).Error; err != nil {
			return nil, err
		}
		if w, err = tx.WebhookForEnv(ctx, x.a.OrgID, x.a.EnvID, id); err != nil {
			return nil, err
		}
		w.Secret = secret
		return x.audit("webhook.rotate_secret", w.ID, "old secret signs until "+now.Add(max(overlap, 0)).Format(time.RFC3339)), nil
	})
	return w, err
}

// StandardWebhookSignature is the webhook-signature header of the
// Standard Webhooks form (X8), sent beside webhook-id: id and
// webhook-timestamp: t's unix seconds: "v1,<base64>" per secret, space
// separated, each the base64 HMAC-SHA256 of "<id>.<unix>.<body>" keyed by
// the secret's part after "whsec_" read as base64, which is what stock
// verifiers do with the same "whsec_…" secret (its hex digits are valid
// base64).
func StandardWebhookSignature(secrets []string, id string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var sigs []string
	for _, sec := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sec, "whsec_"))
		if err != nil {
			key = []byte(sec) // never for a secret Clusterdeck made
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + ts + "."))
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}

// WebhookSignature is the Clusterdeck-Signature header of body sent at t:
// "t=<unix>,v1=<hex>" with one v1 per secret, each the hex HMAC-SHA256 of
// "<unix>.<body>" (X8). Receivers accept the event when any v1 matches and
// t is recent.
func WebhookSignature(secrets []string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=" + ts)
	for _, sec := range secrets {
		m := hmac.New(sha256.New, []byte(sec))
		m.Write([]byte(ts + "."))
		m.Write(body)
		b.WriteString(",v1=" + hex.EncodeToString(m.Sum(nil)))
	}
	return b.String()
}
