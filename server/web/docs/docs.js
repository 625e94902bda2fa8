// API reference: fetches /openapi.json and renders operations, parameters, bodies, responses and schemas
// with plain DOM (no framework, no CDN), under the same Content-Security-Policy as the dashboard.
(function () {
  "use strict";
  const REF = "#/components/schemas/";

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  // Text with `code` spans (descriptions use backticks), as nodes: never innerHTML.
  function prose(text) {
    return String(text || "").split("`").map((part, i) => (i % 2 ? el("code", {}, part) : part));
  }
  function anchor(name) { return "schema-" + name; }
  function opAnchor(method, path) { return "op-" + method + path.replace(/[^a-zA-Z0-9]+/g, "-"); }

  // A one-line type for a schema: links for $refs, "A | B" for unions, "array of X", enums listed.
  function typeOf(schema) {
    if (!schema || Object.keys(schema).length === 0) return el("span", { class: "type" }, "any");
    if (schema.$ref) {
      const name = schema.$ref.slice(REF.length);
      return el("a", { href: "#" + anchor(name), class: "type" }, name);
    }
    const union = schema.anyOf || schema.oneOf;
    if (union) {
      const parts = [];
      union.forEach((s, i) => { if (i) parts.push(" | "); parts.push(typeOf(s)); });
      return el("span", {}, parts);
    }
    if (schema.enum) return el("span", { class: "type" }, schema.enum.map((v) => JSON.stringify(v)).join(" | "));
    if (schema.const !== undefined) return el("span", { class: "type" }, JSON.stringify(schema.const));
    if (schema.type === "array") return el("span", {}, el("span", { class: "type" }, "array of "), typeOf(schema.items));
    if (schema.type === "object" && schema.additionalProperties && !schema.properties) {
      const values = schema.additionalProperties === true ? {} : schema.additionalProperties;
      return el("span", {}, el("span", { class: "type" }, "object of "), typeOf(values));
    }
    const bounds = [];
    if (schema.minLength !== undefined) bounds.push("min length " + schema.minLength);
    if (schema.maxLength !== undefined) bounds.push("max length " + schema.maxLength);
    if (schema.minimum !== undefined) bounds.push("≥ " + schema.minimum);
    if (schema.maximum !== undefined) bounds.push("≤ " + schema.maximum);
    const text = (Array.isArray(schema.type) ? schema.type.join(" | ") : schema.type || "any");
    return el("span", { class: "type" }, bounds.length ? text + " (" + bounds.join(", ") + ")" : text);
  }

  function propertiesTable(schema) {
    const props = schema.properties || {};
    const required = new Set(schema.required || []);
    const rows = Object.entries(props).map(([name, prop]) =>
      el("tr", {},
        el("td", {}, el("code", {}, name), required.has(name) ? el("span", { class: "req" }, "required") : null),
        el("td", {}, typeOf(prop)),
        el("td", { class: "desc" }, prose(prop.description), prop.default !== undefined ? " (default " + JSON.stringify(prop.default) + ")" : "")));
    if (!rows.length) return el("p", { class: "desc" }, "any JSON object");
    return el("table", {}, el("tr", {}, el("th", {}, "field"), el("th", {}, "type"), el("th", {}, "")), rows);
  }

  function content(body) {
    const entries = Object.entries((body && body.content) || {});
    if (!entries.length) return el("span", { class: "desc" }, "no body");
    return el("span", {}, entries.map(([media, m], i) => [i ? ", " : "", el("code", {}, media), m.schema ? [" ", typeOf(m.schema)] : ""]));
  }

  function security(op, doc) {
    const reqs = op.security || doc.security || [];
    if (!reqs.length) return el("span", { class: "lock" }, "public");
    return el("span", { class: "lock" }, "key: " + reqs.map((r) => Object.keys(r).join(" + ")).join(" or "));
  }

  function operation(method, path, op, doc) {
    const parts = [el("h3", {}, el("span", { class: "method " + method }, method), el("code", {}, path),
      el("span", { class: "summary" }, op.summary || ""), security(op, doc))];
    if (op.description) parts.push(el("p", {}, prose(op.description)));
    for (const [where, title] of [["query", "Query parameters"], ["header", "Headers"]]) {
      const params = (op.parameters || []).filter((p) => p.in === where);
      if (!params.length) continue;
      parts.push(el("h4", {}, title));
      parts.push(el("table", {}, el("tr", {}, el("th", {}, "name"), el("th", {}, "type"), el("th", {}, "")),
        params.map((p) => el("tr", {},
          el("td", {}, el("code", {}, p.name), p.required ? el("span", { class: "req" }, "required") : null),
          el("td", {}, typeOf(p.schema)), el("td", { class: "desc" }, prose(p.description))))));
    }
    if (op.requestBody) {
      parts.push(el("h4", {}, "Request body"));
      parts.push(el("p", {}, content(op.requestBody)));
    }
    parts.push(el("h4", {}, "Responses"));
    parts.push(el("table", {}, el("tr", {}, el("th", {}, "status"), el("th", {}, "body"), el("th", {}, "")),
      Object.entries(op.responses || {}).map(([status, r]) => el("tr", {},
        el("td", {}, el("span", { class: "status s" + status[0] }, status)),
        el("td", {}, content(r)), el("td", { class: "desc" }, prose(r.description))))));
    return el("article", { class: "op", id: opAnchor(method, path) }, parts);
  }

  function schemaCard(name, schema) {
    const parts = [el("h3", {}, el("code", {}, name))];
    if (schema.description) parts.push(el("p", {}, prose(schema.description)));
    if (schema.properties) parts.push(propertiesTable(schema));
    else parts.push(el("p", {}, typeOf(schema)));
    return el("article", { class: "schema", id: anchor(name) }, parts);
  }

  function render(doc) {
    document.getElementById("title").textContent = doc.info.title + " API " + doc.info.version;
    document.title = doc.info.title + " API reference";
    document.getElementById("intro").replaceChildren(...prose(doc.info.description), " The contract: ",
      el("a", { href: "/openapi.json" }, "/openapi.json"), " (OpenAPI " + doc.openapi + ").");
    const schemes = (doc.components && doc.components.securitySchemes) || {};
    const none = !Object.keys(schemes).length;  // a server without keys documents none
    document.getElementById("auth").replaceChildren(el("h2", {}, "Authentication"),
      none ? el("p", { class: "desc", id: "no-keys" }, "This server has no API keys configured: it asks for none.")
        : el("table", {}, Object.entries(schemes).map(([name, s]) => el("tr", {},
          el("td", {}, el("code", {}, name)),
          el("td", {}, s.type === "http" ? "HTTP " + s.scheme : s.type + " in " + s.in + ": " + s.name),
          el("td", { class: "desc" }, s.description || "")))));
    const toc = [el("h2", {}, "Operations")];
    const ops = [el("h2", {}, "Operations")];
    for (const [path, item] of Object.entries(doc.paths || {})) {
      for (const [method, op] of Object.entries(item)) {
        toc.push(el("a", { href: "#" + opAnchor(method, path) }, el("span", { class: "mono" }, method.toUpperCase() + " " + path)));
        ops.push(operation(method, path, op, doc));
      }
    }
    const schemas = (doc.components && doc.components.schemas) || {};
    toc.push(el("h2", {}, "Schemas"));
    const cards = [el("h2", {}, "Schemas")];
    for (const name of Object.keys(schemas).sort()) {
      toc.push(el("a", { href: "#" + anchor(name) }, el("span", { class: "mono" }, name)));
      cards.push(schemaCard(name, schemas[name]));
    }
    document.getElementById("toc").replaceChildren(...toc);
    document.getElementById("operations").replaceChildren(...ops);
    document.getElementById("schemas").replaceChildren(...cards);
    if (location.hash) { const target = document.getElementById(location.hash.slice(1)); if (target) target.scrollIntoView(); }
  }

  fetch("/openapi.json", { headers: { Accept: "application/json" } })
    .then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
    .then(render)
    .catch((err) => {
      document.getElementById("intro").replaceChildren(el("span", { class: "error" }, "Could not load /openapi.json: " + err.message));
    });
})();
