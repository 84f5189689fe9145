/** A command's fields from its JSON Schema as help text: one line per field with its default and description. */

interface SchemaNode {
  type?: string | string[];
  enum?: unknown[];
  default?: unknown;
  description?: string;
  properties?: Record<string, SchemaNode>;
}

export function describeConfigFields(schema: object): string {
  const rows: [string, string, string][] = [];
  const walk = (node: SchemaNode, prefix: string) => {
    for (const [name, field] of Object.entries(node.properties ?? {})) {
      const path = `${prefix}${name}`;
      if (field.properties) {
        walk(field, `${path}.`);
        continue;
      }
      const choices = field.enum ? ` (${field.enum.join(" | ")})` : "";
      rows.push([path, formatDefault(field.default), `${field.description ?? ""}${choices}`]);
    }
  };
  walk(schema as SchemaNode, "");
  const nameWidth = Math.max(...rows.map(([name]) => name.length));
  const valueWidth = Math.max(...rows.map(([, value]) => value.length));
  return rows
    .map(([name, value, text]) => `  ${name.padEnd(nameWidth)}  ${value.padEnd(valueWidth)}  ${text}`)
    .join("\n");
}

function formatDefault(value: unknown): string {
  if (value === undefined) return "-";
  if (Array.isArray(value)) return value.join(",");
  return typeof value === "string" ? value : JSON.stringify(value);
}
