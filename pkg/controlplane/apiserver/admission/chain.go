package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
)

// Plugin is one admission plugin, as upstream's admission.Interface: its
// upstream name and the operations it looks at. A plugin mutates
// (MutationInterface), validates (ValidationInterface) or both.
type Plugin interface {
	Name() string
	Handles(op admissionv1.Operation) bool
}

// MutationInterface is a plugin that may change the object, before
// defaulting and validation.
type MutationInterface interface {
	Plugin
	Admit(ctx context.Context, a *Attributes) error
}

// ValidationInterface is a plugin that checks the final object, after
// validation.
type ValidationInterface interface {
	Plugin
	Validate(ctx context.Context, a *Attributes) error
}

// Chain runs plugins in their order; the first refusal ends a phase.
type Chain struct{ plugins []Plugin }

// NewChain makes a chain of plugins in the order given.
func NewChain(plugins ...Plugin) *Chain { return &Chain{plugins: plugins} }

// Admit is the mutating phase: every mutating plugin that handles the
// operation, in order.
func (c *Chain) Admit(ctx context.Context, a *Attributes) error {
	return c.run(a, func(p Plugin) error {
		if m, ok := p.(MutationInterface); ok {
			return m.Admit(ctx, a)
		}
		return nil
	})
}

// Validate is the validating phase: every validating plugin that handles
// the operation, in order.
func (c *Chain) Validate(ctx context.Context, a *Attributes) error {
	return c.run(a, func(p Plugin) error {
		if v, ok := p.(ValidationInterface); ok {
			return v.Validate(ctx, a)
		}
		return nil
	})
}

// run calls each plugin that handles the operation, in order, until one
// refuses.
func (c *Chain) run(a *Attributes, call func(Plugin) error) error {
	for _, p := range c.plugins {
		if !p.Handles(a.Operation) {
			continue
		}
		if err := call(p); err != nil {
			return err
		}
	}
	return nil
}

// Names lists the plugins in order.
func (c *Chain) Names() []string { return c.names(func(Plugin) bool { return true }) }

// MutatingNames lists the mutating plugins in order.
func (c *Chain) MutatingNames() []string {
	return c.names(func(p Plugin) bool { _, ok := p.(MutationInterface); return ok })
}

// ValidatingNames lists the validating plugins in order.
func (c *Chain) ValidatingNames() []string {
	return c.names(func(p Plugin) bool { _, ok := p.(ValidationInterface); return ok })
}

func (c *Chain) names(keep func(Plugin) bool) []string {
	var names []string
	for _, p := range c.plugins {
		if keep(p) {
			names = append(names, p.Name())
		}
	}
	return names
}
