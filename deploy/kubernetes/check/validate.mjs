// Checks Kubernetes manifests offline, as the API server would with strict field validation:
//   node validate.mjs < rendered.yaml        (e.g. kubectl kustomize deploy/kubernetes/overlays/example | node validate.mjs)
// Every document must be a kind this checker knows; its fields are checked against Kubernetes'
// OpenAPI schema (types, required fields, enums, formats: kubernetes-models) and against the
// API's field list (a field Kubernetes does not have, such as a misspelled one, is an error:
// @kubernetes/client-node's attribute maps). Prints one line per problem, naming the document
// (kind/name) and the field's path, and exits 1 when there is any; else "N objects valid".
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import * as core from "kubernetes-models/v1";
import * as apps from "kubernetes-models/apps/v1";
import * as policy from "kubernetes-models/policy/v1";
import * as rbac from "kubernetes-models/rbac.authorization.k8s.io/v1";
import * as batch from "kubernetes-models/batch/v1";
// The generated models only: the package's entry point also loads its HTTP client.
import * as client from "@kubernetes/client-node/dist/gen/models/all.js";

const MODELS = {
  "v1": core,
  "apps/v1": apps,
  "policy/v1": policy,
  "rbac.authorization.k8s.io/v1": rbac,
  "batch/v1": batch,
};

// The client's model class of a kind: V1 + Kind (core and named groups alike at v1).
function clientType(apiVersion, kind) {
  const version = apiVersion.split("/").pop();
  return version.charAt(0).toUpperCase() + version.slice(1) + kind;
}

const PRIMITIVES = new Set(["string", "number", "boolean", "Date", "any", "object", "IntOrString", "RuntimeRawExtension"]);

// Fields of `value` that the client's attribute map of `type` does not list, as paths.
function unknownFields(value, type, path, out) {
  if (value === null || value === undefined || PRIMITIVES.has(type)) {
    return;
  }
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (Array.isArray(value)) {
      value.forEach((v, i) => unknownFields(v, array[1], `${path}/${i}`, out));
    }
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value === "object") {
      for (const [k, v] of Object.entries(value)) {
        unknownFields(v, map[1], `${path}/${k}`, out);
      }
    }
    return;
  }
  const model = client[type];
  if (!model || typeof model.getAttributeTypeMap !== "function" || typeof value !== "object" || Array.isArray(value)) {
    return;
  }
  const attributes = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [k, v] of Object.entries(value)) {
    if (!attributes.has(k)) {
      const near = [...attributes.keys()].filter((a) => a.toLowerCase() === k.toLowerCase() || distance(a, k) <= 2);
      out.push(`${path}/${k}: unknown field${near.length ? ` (did you mean ${near.join(", ")}?)` : ""}`);
    } else {
      unknownFields(v, attributes.get(k), `${path}/${k}`, out);
    }
  }
}

function distance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length][b.length];
}

function check(doc) {
  const problems = [];
  const { apiVersion, kind } = doc;
  const Model = MODELS[apiVersion]?.[kind];
  if (!Model) {
    return [`apiVersion ${apiVersion} kind ${kind}: not a kind this checker knows`];
  }
  try {
    new Model(doc).validate();
  } catch (e) {
    for (const err of e.errors ?? [{ instancePath: "", message: e.message }]) {
      const detail = err.params?.missingProperty
        ? `missing required field ${err.params.missingProperty}`
        : err.params?.allowedValues
          ? `${err.message} (${err.params.allowedValues.join(", ")})`
          : err.message ?? err.keyword;
      problems.push(`${err.instancePath || "/"}: ${detail}`);
    }
  }
  unknownFields(doc, clientType(apiVersion, kind), "", problems);
  return problems;
}

const text = readFileSync(process.argv[2] ?? 0, "utf8");
let objects = 0;
let failed = 0;
for (const parsed of parseAllDocuments(text)) {
  if (parsed.errors.length) {
    console.log(`YAML: ${parsed.errors.map((e) => e.message).join("; ")}`);
    failed++;
    continue;
  }
  const doc = parsed.toJS();
  if (doc === null) {
    continue;
  }
  objects++;
  const name = `${doc.kind}/${doc.metadata?.name ?? "?"}`;
  for (const p of check(doc)) {
    console.log(`${name} ${p}`);
    failed++;
  }
}
if (failed) {
  console.log(`${failed} problem(s) in ${objects} objects`);
  process.exit(1);
}
console.log(`${objects} objects valid`);
