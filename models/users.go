package models

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/trustelem/zxcvbn"
	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"
)

// PasswordCost is bcrypt's work factor for new password hashes. Tests lower
// it to bcrypt.MinCost; production keeps the default.
var PasswordCost = bcrypt.DefaultCost

// Password length bounds: long enough to resist guessing, and at most
// bcrypt's 72-byte input (longer input would be silently truncated).
const (
	MinPasswordLen   = 10
	MaxPasswordBytes = 72
)

// ErrBadCredentials is a failed log-in: unknown email or wrong password
// (deliberately not told apart).
var ErrBadCredentials = errors.New("models: email or password is wrong")

// HashPassword returns the bcrypt hash of pw.
func HashPassword(pw string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), PasswordCost)
	if err != nil {
		return "", fmt.Errorf("models: hash password: %w", err)
	}
	return string(h), nil
}

var (
	dummyOnce sync.Once
	dummyHash []byte
)

// checkPassword compares in constant time; with an empty hash (no such
// user) it still spends a bcrypt comparison, so timing does not tell
// whether an account exists.
func checkPassword(hash, pw string) bool {
	if hash == "" {
		dummyOnce.Do(func() { dummyHash, _ = bcrypt.GenerateFromPassword([]byte("not-a-password"), PasswordCost) })
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(pw))
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw)) == nil
}

// NormalizeEmail trims and lower-cases an address; emails are stored so.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// EmailProblem explains why s (already normalised) is not an address we
// accept, or returns "".
func EmailProblem(s string) string {
	if s == "" {
		return "Enter your email address."
	}
	if len(s) > 254 {
		return "That email address is too long."
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" || strings.ContainsAny(s, " \t\r\n<>") {
		return "Enter an email address like name@example.com."
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return "Enter an email address like name@example.com."
	}
	return ""
}

// PasswordProblem explains why pw is not acceptable, or returns "".
func PasswordProblem(pw, email string) string {
	switch {
	case utf8.RuneCountInString(pw) < MinPasswordLen:
		return fmt.Sprintf("Use at least %d characters.", MinPasswordLen)
	case len(pw) > MaxPasswordBytes:
		return fmt.Sprintf("Use at most %d bytes (about %d letters).", MaxPasswordBytes, MaxPasswordBytes)
	case !utf8.ValidString(pw):
		return "The password contains invalid characters."
	case strings.TrimSpace(pw) == "":
		return "The password cannot be only spaces."
	case email != "" && strings.EqualFold(pw, email):
		return "Do not use your email address as the password."
	case commonPassword(pw, email):
		return "This password is too common or too easy to guess (like password12 or qwertyuiop1). " +
			"Use a less usual one, such as three or four unrelated words."
	}
	return ""
}

// commonPassword reports whether pw is a well-known password or a trivial
// variant of one (a leaked-password list entry plus digits, a keyboard row,
// a sequence, the email's name): zxcvbn's estimate of fewer than a million
// guesses (score 0 or 1), from its lists of the most common leaked passwords,
// names and words (A1).
func commonPassword(pw, email string) bool {
	var hints []string
	if local, _, ok := strings.Cut(email, "@"); ok {
		hints = append(hints, local)
	}
	return zxcvbn.PasswordStrength(pw, hints).Score < 2
}

// NameProblem checks a display name (people, organisations, environments,
// keys): 1 to max characters, printable.
func NameProblem(s string, max int, what string) string {
	switch {
	case s == "":
		return "Enter " + what + "."
	case !utf8.ValidString(s):
		return "Use plain text."
	case utf8.RuneCountInString(s) > max:
		return fmt.Sprintf("Use at most %d characters.", max)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "Use plain text without control characters."
		}
	}
	return ""
}

// SignupInput is a new account: the person, their password, and the name of
// the organisation they will own. MaxMachines/MaxGPUs are the operator's
// default quotas (0 means the built-in defaults).
type SignupInput struct {
	Email, Name, Password, OrgName string
	MaxMachines, MaxGPUs           int
	InviteToken                    string // join the inviting org instead of creating one
}

// Normalize trims the fields and lower-cases the email.
func (in *SignupInput) Normalize() {
	in.Email = NormalizeEmail(in.Email)
	in.Name = strings.TrimSpace(in.Name)
	in.OrgName = strings.TrimSpace(in.OrgName)
	in.InviteToken = strings.TrimSpace(in.InviteToken)
}

// Validate returns field problems (keys: email, name, password, org_name).
// The org name may be empty: it then defaults to "<Name>'s organisation".
func (in SignupInput) Validate() FieldErrors {
	fe := FieldErrors{}
	if p := EmailProblem(in.Email); p != "" {
		fe["email"] = p
	}
	if p := NameProblem(in.Name, 100, "your name"); p != "" {
		fe["name"] = p
	}
	if p := PasswordProblem(in.Password, in.Email); p != "" {
		fe["password"] = p
	}
	if in.OrgName != "" && in.InviteToken == "" {
		if p := NameProblem(in.OrgName, 100, "a name for your organisation"); p != "" {
			fe["org_name"] = p
		}
	}
	return fe
}

// Signup creates a user with an organisation they own and its default
// environment (or, with an invite token, joins the inviting organisation),
// and writes the audit entry, in one transaction.
func (s *Store) Signup(ctx context.Context, in SignupInput, ip string) (User, Org, error) {
	in.Normalize()
	if fe := in.Validate(); len(fe) > 0 {
		return User{}, Org{}, fe
	}
	hash, err := HashPassword(in.Password)
	if err != nil {
		return User{}, Org{}, err
	}
	var u User
	var org Org
	err = s.Tx(ctx, func(tx *Store) error {
		var n int64
		if err := tx.db.Model(&User{}).Where("email = ?", in.Email).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return FieldErrors{"email": "An account with this email already exists. Log in instead."}
		}
		now := tx.Now()
		u = User{ID: NewID("usr"), Email: in.Email, Name: in.Name, PasswordHash: hash, SessionVersion: 1, CreatedAt: now}
		if err := tx.db.Create(&u).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return FieldErrors{"email": "An account with this email already exists. Log in instead."}
			}
			return fmt.Errorf("models: create user: %w", err)
		}
		if in.InviteToken != "" {
			inv, err := tx.acceptInvite(ctx, in.InviteToken, u)
			if err != nil {
				return err
			}
			org, err = tx.OrgByID(ctx, inv.OrgID)
			return err
		}
		name := in.OrgName
		if name == "" {
			name = truncateRunes(in.Name+"'s organisation", 100)
		}
		org, err = tx.createOrg(ctx, name, u.ID, in.MaxMachines, in.MaxGPUs)
		if err != nil {
			return err
		}
		return tx.AuditLog(ctx, AuditEntry{OrgID: org.ID, UserID: u.ID, Actor: u.Email, Action: "user.signup", Target: u.Email, IP: ip})
	})
	if err != nil {
		return User{}, Org{}, err
	}
	return u, org, nil
}

// createOrg makes an organisation owned by ownerID with a default environment.
func (s *Store) createOrg(ctx context.Context, name, ownerID string, maxMachines, maxGPUs int) (Org, error) {
	if maxMachines <= 0 {
		maxMachines = DefaultMaxMachines
	}
	if maxGPUs <= 0 {
		maxGPUs = DefaultMaxGPUs
	}
	now := s.Now()
	org := Org{ID: NewID("org"), Name: name, MaxMachines: maxMachines, MaxGPUs: maxGPUs, CreatedAt: now}
	if err := s.db.WithContext(ctx).Create(&org).Error; err != nil {
		return Org{}, fmt.Errorf("models: create org: %w", err)
	}
	m := Membership{OrgID: org.ID, UserID: ownerID, Role: RoleOwner, CreatedAt: now}
	if err := s.db.WithContext(ctx).Create(&m).Error; err != nil {
		return Org{}, fmt.Errorf("models: create membership: %w", err)
	}
	env := Environment{ID: NewID("env"), OrgID: org.ID, Name: "default", IsDefault: true, CreatedAt: now}
	if err := s.db.WithContext(ctx).Create(&env).Error; err != nil {
		return Org{}, fmt.Errorf("models: create default environment: %w", err)
	}
	return org, nil
}

// CreateOrg makes an organisation owned by an existing user (the demo and
// operators use it). Zero quotas mean the defaults.
func (s *Store) CreateOrg(ctx context.Context, name, ownerID string, maxMachines, maxGPUs int) (Org, error) {
	var org Org
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		org, err = tx.createOrg(ctx, name, ownerID, maxMachines, maxGPUs)
		return err
	})
	return org, err
}

// Authenticate checks an email and password. Unknown emails and wrong
// passwords both return ErrBadCredentials after the same bcrypt work.
func (s *Store) Authenticate(ctx context.Context, email, password string) (User, error) {
	email = NormalizeEmail(email)
	var u User
	err := s.db.WithContext(ctx).Where("email = ?", email).Take(&u).Error
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return User{}, fmt.Errorf("models: find user: %w", err)
	}
	if !checkPassword(u.PasswordHash, password) || u.ID == "" {
		return User{}, ErrBadCredentials
	}
	return u, nil
}

// UserByID loads a user.
func (s *Store) UserByID(ctx context.Context, id string) (User, error) {
	var u User
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&u).Error
	return u, notFound(err, "user "+id)
}

// UserByEmail loads a user by (normalised) email.
func (s *Store) UserByEmail(ctx context.Context, email string) (User, error) {
	var u User
	err := s.db.WithContext(ctx).Where("email = ?", NormalizeEmail(email)).Take(&u).Error
	return u, notFound(err, "user by email")
}

// ChangePassword replaces the password after checking the current one, and
// bumps the session version so every other session is logged out. It
// returns the updated user (with the new version for the caller's cookie).
func (s *Store) ChangePassword(ctx context.Context, userID, current, next string) (User, error) {
	u, err := s.UserByID(ctx, userID)
	if err != nil {
		return User{}, err
	}
	fe := FieldErrors{}
	if !checkPassword(u.PasswordHash, current) {
		fe["current_password"] = "That is not your current password."
	}
	if p := PasswordProblem(next, u.Email); p != "" {
		fe["new_password"] = p
	} else if next == current {
		fe["new_password"] = "Choose a password different from the current one."
	}
	if len(fe) > 0 {
		return User{}, fe
	}
	return s.SetPassword(ctx, userID, next)
}

// SetPassword sets a new password without checking the old one (the demo
// command) and bumps the session version.
func (s *Store) SetPassword(ctx context.Context, userID, password string) (User, error) {
	hash, err := HashPassword(password)
	if err != nil {
		return User{}, err
	}
	res := s.db.WithContext(ctx).Model(&User{}).Where("id = ?", userID).Updates(map[string]any{
		"password_hash": hash, "session_version": gorm.Expr("session_version + 1")})
	if res.Error != nil {
		return User{}, fmt.Errorf("models: set password: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return User{}, fmt.Errorf("models: set password %s: %w", userID, ErrNotFound)
	}
	return s.UserByID(ctx, userID)
}

// RevokeSessions bumps the user's session version: every cookie issued
// before stops working ("log out everywhere"). It returns the new version.
func (s *Store) RevokeSessions(ctx context.Context, userID string) (int, error) {
	res := s.db.WithContext(ctx).Model(&User{}).Where("id = ?", userID).
		Update("session_version", gorm.Expr("session_version + 1"))
	if res.Error != nil {
		return 0, fmt.Errorf("models: revoke sessions: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return 0, fmt.Errorf("models: revoke sessions %s: %w", userID, ErrNotFound)
	}
	u, err := s.UserByID(ctx, userID)
	return u.SessionVersion, err
}

// UpdateProfile changes the user's display name.
func (s *Store) UpdateProfile(ctx context.Context, userID, name string) error {
	name = strings.TrimSpace(name)
	if p := NameProblem(name, 100, "your name"); p != "" {
		return FieldErrors{"name": p}
	}
	return s.db.WithContext(ctx).Model(&User{}).Where("id = ?", userID).Update("name", name).Error
}

// SetOperator grants or removes the site-admin flag (`clusterdeck admin grant`).
func (s *Store) SetOperator(ctx context.Context, email string, on bool) (User, error) {
	u, err := s.UserByEmail(ctx, email)
	if err != nil {
		return User{}, err
	}
	if err := s.db.WithContext(ctx).Model(&User{}).Where("id = ?", u.ID).Update("is_operator", on).Error; err != nil {
		return User{}, fmt.Errorf("models: set operator: %w", err)
	}
	u.IsOperator = on
	return u, nil
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}
