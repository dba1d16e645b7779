// Package payments takes money in (B4, B7): Stripe Checkout for top-ups,
// verified webhooks, and off-session charges for auto-recharge, through
// stripe-go. Without a Stripe key it is a clearly labelled test mode that
// credits at once. Amounts are integer micro-dollars inside and whole cents
// at Stripe. It imports nothing of ours.
package payments

import (
	"context"
	"errors"
	"fmt"

	"github.com/stripe/stripe-go/v76"
)

// MinTopUp is B4's smallest top-up: $5, in micro-dollars.
const MinTopUp int64 = 5_000_000

// microPerCent converts micro-dollars to Stripe's cents.
const microPerCent = 10_000

// Provider is everything payments offer; web and jobs each declare the part
// they use.
type Provider interface {
	// TestMode is true when no Stripe key is configured: top-ups and
	// charges succeed at once and no money moves.
	TestMode() bool
	// CreateCheckout starts a top-up: the buyer pays at the returned URL and
	// the ledger is credited by the verified webhook only (B4). In test mode
	// the checkout is Paid at once.
	CreateCheckout(ctx context.Context, p CheckoutParams) (Checkout, error)
	// ParseWebhook verifies a webhook's signature over its raw body and
	// decodes it. ErrBadSignature means: answer 400 and change nothing.
	ParseWebhook(payload []byte, signature string) (Event, error)
	// ChargeOffSession charges a saved card for auto-recharge. A decline is a
	// result (Charge.Status failed), not an error; an error means the outcome
	// is unknown and the same idempotency key may be retried.
	ChargeOffSession(ctx context.Context, p ChargeParams) (Charge, error)
}

// CheckoutParams is one top-up to pay.
type CheckoutParams struct {
	OrgID, TopUpID        string
	Amount                int64  // micro-dollars, whole cents, at least MinTopUp
	CustomerID            string // the org's Stripe customer, "" for a first payment
	CustomerEmail         string
	SuccessURL, CancelURL string
}

// Checkout is a started top-up.
type Checkout struct {
	ID   string // the Checkout Session id
	URL  string // where the buyer pays
	Paid bool   // test mode: paid already, credit now
}

// Event types the ledger acts on; any other is answered 200 and ignored.
// The operator subscribes the webhook endpoint to exactly these (docs/operating.md).
const (
	EventCheckoutCompleted = "checkout.session.completed"
	// A delayed payment method (bank debit) settles after the session
	// completed unpaid: one of these two follows (B4).
	EventCheckoutAsyncSucceeded = "checkout.session.async_payment_succeeded"
	EventCheckoutAsyncFailed    = "checkout.session.async_payment_failed"
	EventPaymentSucceeded       = "payment_intent.succeeded"
	EventPaymentFailed          = "payment_intent.payment_failed"
	EventPaymentProcessing      = "payment_intent.processing"
	EventPaymentRequiresAction  = "payment_intent.requires_action"
)

// WebhookEvents is every event type the ledger acts on, in the order the
// docs/operating.md lists them.
var WebhookEvents = []string{EventCheckoutCompleted, EventCheckoutAsyncSucceeded, EventCheckoutAsyncFailed,
	EventPaymentSucceeded, EventPaymentFailed, EventPaymentProcessing, EventPaymentRequiresAction}

// APIVersion is the Stripe API version stripe-go speaks and the webhook
// endpoint is best created with. Events of another version are still read:
// only WebhookFields are used, decoded leniently (B4).
const APIVersion = stripe.APIVersion

// WebhookFields are the only fields read from an event, whatever its API
// version: the operator's page lists them when the endpoint sends another.
var WebhookFields = []string{"id", "type", "api_version",
	"checkout.session: id, metadata.org_id, metadata.top_up_id, payment_status, amount_total, currency, " +
		"currency_conversion.amount_total, currency_conversion.source_currency, customer, payment_intent",
	"payment_intent: id, metadata.org_id, metadata.top_up_id, metadata.charge_id, status, amount_received, currency, " +
		"customer, payment_method, last_payment_error.code, last_payment_error.message"}

// Event is a verified webhook, reduced to what the ledger needs.
type Event struct {
	ID, Type string
	// From the session or payment intent's metadata.
	OrgID, TopUpID, ChargeID string
	ObjectID                 string // the session or payment intent id
	PaymentIntentID          string
	CustomerID               string
	PaymentMethodID          string // payment_intent.*: the card, saved when the top-up set it up for later
	Amount                   int64  // micro-dollars paid (0 when not a whole number of cents)
	Currency                 string // ISO code, lower case, of Amount
	Paid                     bool   // payment_status paid / status succeeded
	APIVersion               string // the endpoint's API version
	FailureCode              string
	FailureMessage           string
}

// ChargeParams is one off-session charge.
type ChargeParams struct {
	OrgID, ChargeID string
	Amount          int64 // micro-dollars, whole cents
	CustomerID      string
	PaymentMethodID string // the default saved card
	IdempotencyKey  string // derived from the intended charge row
}

// Charge statuses.
const (
	ChargeSucceeded = "succeeded"
	ChargePending   = "pending" // processing: wait for the webhook
	ChargeFailed    = "failed"
)

// Charge is an off-session charge's outcome.
type Charge struct {
	PaymentIntentID        string
	Status                 string
	FailureCode            string // card_declined, authentication_required, …
	DeclineCode            string
	Message                string
	AuthenticationRequired bool // the bank wants the cardholder: do not retry blindly
}

// Errors.
var (
	ErrBadSignature = errors.New("payments: webhook signature is not valid")
	ErrTestMode     = errors.New("payments: test mode takes no webhooks")
)

// Config selects the implementation.
type Config struct {
	SecretKey     string // "" = test mode
	WebhookSecret string
	APIURL        string // "" = Stripe; tests point it at stripe-mock
}

// New returns Stripe when a key is configured, otherwise test mode.
func New(cfg Config) Provider {
	if cfg.SecretKey == "" {
		return TestMode{}
	}
	return NewStripe(cfg)
}

// cents converts an amount, refusing fractions of a cent and non-positive ones.
func cents(amount int64) (int64, error) {
	if amount <= 0 || amount%microPerCent != 0 {
		return 0, fmt.Errorf("payments: %d micro-dollars is not a positive whole number of cents", amount)
	}
	return amount / microPerCent, nil
}

func checkTopUp(p CheckoutParams) error {
	if p.Amount < MinTopUp {
		return fmt.Errorf("payments: a top-up is at least $5")
	}
	if p.OrgID == "" || p.TopUpID == "" {
		return errors.New("payments: a top-up needs an org and a top-up id")
	}
	_, err := cents(p.Amount)
	return err
}

// TestMode is the Provider without Stripe keys: clearly not real money.
// Every checkout is paid at once and every charge succeeds.
type TestMode struct{}

// TestMode implements Provider.
func (TestMode) TestMode() bool { return true }

// CreateCheckout implements Provider: paid at once, back to the success URL.
func (TestMode) CreateCheckout(_ context.Context, p CheckoutParams) (Checkout, error) {
	if err := checkTopUp(p); err != nil {
		return Checkout{}, err
	}
	return Checkout{ID: "test_cs_" + p.TopUpID, URL: p.SuccessURL, Paid: true}, nil
}

// ParseWebhook implements Provider: test mode has no webhooks.
func (TestMode) ParseWebhook([]byte, string) (Event, error) { return Event{}, ErrTestMode }

// ChargeOffSession implements Provider: succeeds at once.
func (TestMode) ChargeOffSession(_ context.Context, p ChargeParams) (Charge, error) {
	if _, err := cents(p.Amount); err != nil {
		return Charge{}, err
	}
	return Charge{PaymentIntentID: "test_pi_" + p.ChargeID, Status: ChargeSucceeded}, nil
}
