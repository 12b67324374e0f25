export async function demoCommand(args: string[]): Promise<number> {
  const { runDemo } = await import("../demo/demo.js");
  return runDemo(args);
}
