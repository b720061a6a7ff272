/** A response body as JSON, typed loosely for assertions. */
export function j(res: Response): Promise<any> {
  return res.json() as Promise<any>;
}
