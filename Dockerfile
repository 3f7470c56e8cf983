# syntax=docker/dockerfile:1
#
# The Tether runner (`tether serve`) with bubblewrap, git and the agent CLIs
# Tether is tested with. Build from the repository's root:
#
#   docker build -t tether .
#   docker run -d -p 7420:7420 -v tether-data:/var/lib/tether \
#     -e TETHER_AUTH_TOKEN=$(openssl rand -hex 24) -e ANTHROPIC_API_KEY tether
#
# docs/operating.md covers the sandbox inside a container, TLS and upgrades.

# Keep in step with go.mod's go line and scripts/install-agents' versions:
# a test holds this file to both.
ARG GO_VERSION=1.26
ARG NODE_VERSION=22

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/tether ./cmd/tether

FROM node:${NODE_VERSION}-bookworm-slim AS agents
ARG CLAUDE_CODE_VERSION=2.1.330
ARG CODEX_VERSION=0.169.0
ARG OPENCODE_VERSION=1.18.33
# Each CLI's native binary is a platform optionalDependency: optional
# dependencies must not be omitted.
RUN npm install --prefix /opt/agents --no-audit --no-fund --save-exact --loglevel=error \
      "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" \
      "@openai/codex@${CODEX_VERSION}" \
      "opencode-ai@${OPENCODE_VERSION}" \
 && /opt/agents/node_modules/.bin/claude --version \
 && /opt/agents/node_modules/.bin/codex --version \
 && /opt/agents/node_modules/.bin/opencode --version

# Node stays: Codex's CLI is a Node script around its binary.
FROM node:${NODE_VERSION}-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap git ca-certificates curl tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 tether \
 && useradd --system --uid 10001 --gid tether --home-dir /var/lib/tether --shell /usr/sbin/nologin tether \
 && install -d -o tether -g tether -m 0700 /var/lib/tether
COPY --from=agents /opt/agents /opt/agents
COPY --from=build /out/tether /usr/local/bin/tether
ENV PATH=/opt/agents/node_modules/.bin:$PATH \
    HOME=/var/lib/tether
USER tether:tether
WORKDIR /var/lib/tether
VOLUME ["/var/lib/tether"]
EXPOSE 7420
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS http://127.0.0.1:7420/readyz >/dev/null || exit 1
# Beyond loopback a runner needs a token: TETHER_AUTH_TOKEN, or
# --auth-token-file on a mounted secret.
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/tether", "serve"]
CMD ["--addr", "0.0.0.0:7420", "--data", "/var/lib/tether", "--log-format", "json"]
