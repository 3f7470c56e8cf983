package mockclaude

import (
	"os"
	"sort"
)

// Static facts the mock reports about itself.
const (
	// CLIVersion is the claude_code_version the mock claims: the version of
	// the captures its message shapes were copied from.
	CLIVersion = "2.1.197"
	// DefaultModel is the model reported when no --model is given.
	DefaultModel = "claude-mock"

	contextWindow = 200000
)

func baseTools() []string {
	return []string{"Task", "Bash", "Edit", "Glob", "Grep", "Read", "Write", "WebFetch", "WebSearch"}
}

func slashCommands() []string {
	return []string{"compact", "clear", "context", "review", "init"}
}

type commandInfo struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	ArgumentHint string `json:"argumentHint"`
}

type agentInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Model       string `json:"model,omitempty"`
}

type modelInfo struct {
	Value          string `json:"value"`
	ResolvedModel  string `json:"resolvedModel"`
	DisplayName    string `json:"displayName"`
	Description    string `json:"description"`
	SupportsEffort bool   `json:"supportsEffort"`
}

type accountInfo struct {
	TokenSource  string `json:"tokenSource"`
	APIKeySource string `json:"apiKeySource"`
	APIProvider  string `json:"apiProvider"`
}

type initializeResponse struct {
	Commands              []commandInfo `json:"commands"`
	Agents                []agentInfo   `json:"agents"`
	OutputStyle           string        `json:"output_style"`
	AvailableOutputStyles []string      `json:"available_output_styles"`
	Models                []modelInfo   `json:"models"`
	Account               accountInfo   `json:"account"`
	PID                   int           `json:"pid"`
}

// initializeRequest is the part of the SDK's initialize request the mock uses.
type initializeRequest struct {
	Hooks map[string][]struct {
		Matcher         string   `json:"matcher"`
		HookCallbackIDs []string `json:"hookCallbackIds"`
	} `json:"hooks"`
	Agents map[string]struct {
		Description string `json:"description"`
		Model       string `json:"model"`
	} `json:"agents"`
	SDKMCPServers []string `json:"sdkMcpServers"`
}

func builtinAgents() []agentInfo {
	return []agentInfo{
		{Name: "general-purpose", Description: "General-purpose agent for multi-step tasks (mock: never runs)."},
		{Name: "Explore", Description: "Fast read-only search agent (mock: never runs).", Model: "haiku"},
		{Name: "Plan", Description: "Software architect agent for implementation plans (mock: never runs)."},
	}
}

// buildInitializeResponse answers initialize; it echoes back only agent
// names, descriptions and models, never prompts or other payloads.
func buildInitializeResponse(req *initializeRequest) initializeResponse {
	agents := builtinAgents()
	if req != nil {
		names := make([]string, 0, len(req.Agents))
		for name := range req.Agents {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			a := req.Agents[name]
			agents = append(agents, agentInfo{Name: name, Description: a.Description, Model: a.Model})
		}
	}
	return initializeResponse{
		Commands: []commandInfo{
			{Name: "compact", Description: "Clear conversation history but keep a summary in context (mock: no-op)", ArgumentHint: "<optional custom summarization instructions>"},
			{Name: "context", Description: "Visualize current context usage", ArgumentHint: ""},
			{Name: "review", Description: "Review a pull request (mock: no-op)", ArgumentHint: ""},
		},
		Agents:                agents,
		OutputStyle:           "default",
		AvailableOutputStyles: []string{"default", "Explanatory", "Learning"},
		Models: []modelInfo{
			{Value: "default", ResolvedModel: DefaultModel, DisplayName: "Default (mock)", Description: "The scripted mock model · free", SupportsEffort: true},
			{Value: "sonnet", ResolvedModel: "claude-sonnet-4-5", DisplayName: "Sonnet (mock)", Description: "Answers like the mock · free", SupportsEffort: true},
			{Value: "haiku", ResolvedModel: "claude-haiku-4-5", DisplayName: "Haiku (mock)", Description: "Answers like the mock · free"},
		},
		Account: accountInfo{TokenSource: "none", APIKeySource: "none", APIProvider: "firstParty"},
		PID:     os.Getpid(),
	}
}

type contextCategory struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Tokens int    `json:"tokens"`
	Color  string `json:"color"`
	Kind   string `json:"kind"`
}

type contextUsage struct {
	Categories        []contextCategory `json:"categories"`
	TotalTokens       int               `json:"totalTokens"`
	MaxTokens         int               `json:"maxTokens"`
	RawMaxTokens      int               `json:"rawMaxTokens"`
	AutocompactSource string            `json:"autocompactSource"`
	Percentage        int               `json:"percentage"`
	GridRows          [][]any           `json:"gridRows"`
	Model             string            `json:"model"`
}

func buildContextUsage(model string, messageTokens int) contextUsage {
	const systemPrompt, tools = 630, 1200
	used := systemPrompt + tools + messageTokens
	return contextUsage{
		Categories: []contextCategory{
			{ID: "system_prompt", Name: "System prompt", Tokens: systemPrompt, Color: "promptBorder", Kind: "used"},
			{ID: "system_tools", Name: "System tools", Tokens: tools, Color: "inactive", Kind: "used"},
			{ID: "messages", Name: "Messages", Tokens: messageTokens, Color: "purple_FOR_SUBAGENTS_ONLY", Kind: "used"},
			{ID: "free_space", Name: "Free space", Tokens: contextWindow - used, Color: "promptBorder", Kind: "free"},
		},
		TotalTokens:       used,
		MaxTokens:         contextWindow,
		RawMaxTokens:      contextWindow,
		AutocompactSource: "auto",
		Percentage:        used * 100 / contextWindow,
		GridRows:          [][]any{},
		Model:             model,
	}
}
