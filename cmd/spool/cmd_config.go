package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/store"
)

// ConfigCmd reads and changes .spool/config.json.
type ConfigCmd struct {
	Get   ConfigGetCmd   `cmd:"" help:"Print a key's value (its default when unset)."`
	Set   ConfigSetCmd   `cmd:"" help:"Set a key; text that parses as JSON is stored as JSON."`
	Unset ConfigUnsetCmd `cmd:"" help:"Remove a key so it takes its default."`
	List  ConfigListCmd  `cmd:"" help:"List every key with its value, kind and meaning."`
}

type ConfigGetCmd struct {
	Key string `arg:"" complete:"config-key" help:"Dotted key such as workqueue.policy."`
}

func (c *ConfigGetCmd) Run(e *env) error {
	st, err := e.openLenient()
	if err != nil {
		return err
	}
	v, _, err := st.Config.Value(c.Key)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, config.Display(v))
	}
	fmt.Fprintln(e.stdout, displayText(config.Display(v)))
	return nil
}

type ConfigSetCmd struct {
	Key   string `arg:"" complete:"config-key" help:"Dotted key."`
	Value string `arg:"" help:"Value: JSON, or plain text taken as a string."`
}

func (c *ConfigSetCmd) Run(e *env) error {
	return changeConfig(e, c.Key, func(cfg *config.Config) error { return cfg.Set(c.Key, c.Value) })
}

type ConfigUnsetCmd struct {
	Key string `arg:"" complete:"config-key" help:"Dotted key."`
}

func (c *ConfigUnsetCmd) Run(e *env) error {
	return changeConfig(e, c.Key, func(cfg *config.Config) error { return cfg.Unset(c.Key) })
}

// changeConfig edits the file under the log's lock so two edits never lose one.
// People get no output (as git config); --json prints the key's new value.
func changeConfig(e *env, key string, change func(*config.Config) error) error {
	st, err := e.openLenient()
	if err != nil {
		return err
	}
	sess, err := st.Log.Begin(e.ctx)
	if err != nil {
		return err
	}
	defer sess.Close()
	cfg, err := config.Load(store.ConfigPath(st.Repo))
	if err != nil {
		return err
	}
	if err := change(cfg); err != nil {
		return err
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	if !e.JSON {
		return nil
	}
	v, set, err := cfg.Value(key)
	if err != nil {
		// A key only the file knew, now unset: it has no value.
		return writeJSON(e.stdout, map[string]any{"key": key, "value": nil, "set": false})
	}
	return writeJSON(e.stdout, map[string]any{"key": key, "value": config.Display(v), "set": set})
}

type ConfigListCmd struct{}

type configRow struct {
	Key     string   `json:"key"`
	Value   any      `json:"value"`
	Set     bool     `json:"set"`
	Default any      `json:"default"`
	Because string   `json:"because,omitempty"` // why the value, unset, is not the default
	Kind    string   `json:"kind"`
	Enum    []string `json:"enum,omitempty"`
	Help    string   `json:"help"`
}

func (c *ConfigListCmd) Run(e *env) error {
	st, err := e.openLenient()
	if err != nil {
		return err
	}
	var rows []configRow
	for _, k := range config.Keys() {
		v, set, _ := st.Config.Value(k.Name)
		rows = append(rows, configRow{k.Name, config.Display(v), set, config.Display(k.Default), st.Config.Why(k.Name), string(k.Kind), k.Enum, k.Help})
	}
	if e.JSON {
		return writeJSON(e.stdout, rows)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		mark := ""
		switch {
		case r.Because != "":
			mark = " (default, as " + r.Because + ")"
		case !r.Set:
			mark = " (default)"
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\n", r.Key, displayText(r.Value), mark, r.Help)
	}
	return tw.Flush()
}

// displayText prints strings bare and everything else as JSON.
func displayText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := jsonCompact(v)
	return string(b)
}
