# syntax=docker/dockerfile:1
# One image for every loopgate process: the bot (default command), the workers (compose overrides the
# command) and the CLI (`docker compose exec bot loopgate runs`). See docs/operations.md.
#
#   docker build -t loopgate .                  the runtime image
#   docker build --target build .               compile only (typecheck included)
#
# The build stage compiles src/ to dist/ (npm run build); the runtime image holds dist/ and the production
# dependencies only, and runs it with plain node: no TypeScript, no tsx, no transpiling at start-up.

# Node 24 LTS, the recommended runtime. Node 20 reached end of life in April 2026; package.json's engines
# still allow it (>= 20.19), so CI runs the suite on 20 and 24.
ARG NODE_IMAGE=node:24-bookworm-slim

# --- deps: every dependency, from the lockfile ---------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund

# --- build: compile with the dev tools (tsc); never part of the runtime image --------------------------
FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs ./scripts/
COPY src ./src
RUN npm run build

# --- prod-deps: production dependencies only -------------------------------------------------------------
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund

# --- runtime ----------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# tini runs as PID 1: it forwards SIGTERM/SIGINT to node (whose handlers drain the bot and let a worker
# finish its current steps) and reaps zombies. It is the ENTRYPOINT, so compose and Kubernetes get it
# without `docker run --init`.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    PORT=3000 \
    LOOPGATE_CONFIG=/app/loopgate.yaml
WORKDIR /app
# Code and dependencies stay owned by root: the process (user node) can read but not change them.
COPY --from=prod-deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY bin ./bin
COPY --from=build /app/dist ./dist
COPY examples ./examples
COPY runbooks ./runbooks
COPY loopgate.example.yaml ./
RUN chmod 0755 bin/loopgate.js && ln -s /app/bin/loopgate.js /usr/local/bin/loopgate
USER node
EXPOSE 3000
# Liveness of the bot (GET /healthz on PORT). Workers serve /healthz on METRICS_PORT instead (default
# 9091): docker-compose.yml gives the worker service its own healthcheck for it.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
# node directly, not npm: npm does not pass SIGTERM on to its child, so shutdown would never be graceful.
CMD ["node", "dist/bot/main.js"]
