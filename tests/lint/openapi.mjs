// openapi.mjs FILE — the OpenAPI document through @apidevtools/swagger-parser: validate (the OpenAPI 3.1
// schema, then the parser's own rules: unique operationIds, declared path parameters, ...) and
// dereference (every $ref resolves, the whole document in memory). Run by tests/lint/run.sh on
// clients/web/openapi.json, the document GET /v1/openapi.json serves. Ends with "openapi: N passed, N failed".
import SwaggerParser from '@apidevtools/swagger-parser';

const file = process.argv[2];
let passed = 0;
let failed = 0;
// each step parses the file afresh: swagger-parser resolves $refs in the object it is given
const steps = {
  'swagger-parser validate': async () => { await SwaggerParser.validate(file); return ''; },
  'swagger-parser dereference': async () => {
    const api = await SwaggerParser.dereference(file);
    return `${Object.keys(api.paths).length} paths`;
  },
};
for (const [name, step] of Object.entries(steps)) {
  try {
    const what = await step();
    passed++;
    console.log(`ok   ${name} ${file}${what ? ` (${what})` : ''}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name} ${file}:\n${e.message}`);
  }
}
console.log(`openapi: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
