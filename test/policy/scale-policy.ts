/**
 * A policy whose run_action "scale" types replicas as a string (as some deploy APIs take it), with a deny
 * on more than 10 replicas before an allow: the case a rule on a number must not skip.
 */
export const SCALE_POLICY = `
approvals:
  approvers: [U0MGR]
  trusted: [run_action]
tools:
  run_action:
    actions:
      scale:
        description: Scale one service
        params:
          replicas: { type: string, pattern: "^.{1,20}$" }
          env: { enum: [staging, prod] }
        http: { method: POST, url: "https://deploy.example/scale?n={replicas}&env={env}" }
rules:
  run_action:
    - name: no big scale-ups
      when: { params.replicas: { gt: 10 } }
      outcome: deny
      reason: more than 10 replicas needs a change request
    - name: prod
      when: { params.env: prod }
      outcome: ask
      approvers: [S0SRELEADS]
      quorum: 2
    - name: anything else
      outcome: allow
`;
